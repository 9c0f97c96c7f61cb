"""People in the loop: the model asks the user a question and waits for the answer.

* :mod:`.capability` — :class:`AskUser`, the ``ask_user`` tool (question, optional choices,
  optional JSON schema of the answer), parked and answered like a tool confirmation;
* :mod:`.answers` — question details and the check of an answer.
"""

from harnessed.permissions.answers import QuestionAnswerError, is_question
from harnessed.questions.capability import ASK_USER, AskUser

__all__ = ["ASK_USER", "AskUser", "QuestionAnswerError", "is_question"]
