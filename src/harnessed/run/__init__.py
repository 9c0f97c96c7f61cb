"""The run loop: :class:`AgentRun` executes one call of one session (see :mod:`.agent_run`).

* :mod:`.deps` — :class:`LoopHost`, what the loop needs of its agent;
* :mod:`.base` — events, session log records, the state, work that yields events;
* :mod:`.model_step` — preparing a request and streaming the model's answer;
* :mod:`.approvals` — what the run asks before tools run (the agent passes it in; the
  permissions capability implements it);
* :mod:`.tool_step` — approving and running tool calls, committing the step;
* :mod:`.output_step` — the typed final answer: the schema in the request, the check of the
  answer, retries;
* :mod:`.fair` — cooperative time slicing: runs sharing an event loop take turns with the
  rest of its work;
* :mod:`.agent_run` — the call from start to end (start, steps, end): safe points, steering,
  interrupts, failures.
"""

from harnessed.run.agent_run import AgentRun
from harnessed.run.deps import LoopHost
from harnessed.run.fair import DEFAULT_TIME_SLICE, checkpoint, set_time_slice, time_slice

__all__ = [
    "DEFAULT_TIME_SLICE",
    "AgentRun",
    "LoopHost",
    "checkpoint",
    "set_time_slice",
    "time_slice",
]
