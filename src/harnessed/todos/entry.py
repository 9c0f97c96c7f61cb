"""``TodoEntry``: one item of the list the model sends to ``todo_write`` (a pydantic model, in
its own module so that ``import harnessed`` does not import pydantic)."""

from __future__ import annotations

from typing import Literal

import pydantic

__all__ = ["TodoEntry"]


class TodoEntry(pydantic.BaseModel):
    """One item of the task list."""

    model_config = pydantic.ConfigDict(extra="forbid")

    content: str = pydantic.Field(description="What to do, as a short imperative sentence.")
    status: Literal["pending", "in_progress", "completed"] = pydantic.Field(
        "pending", description="pending, in_progress (at most one item) or completed."
    )
    id: str | None = pydantic.Field(
        None, description="The id of an existing item you are updating; leave out for new items."
    )
