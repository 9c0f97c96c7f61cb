"""read_file paging: a first line longer than the page's character budget (but short enough
to be read whole) makes the page skip the *next* line, so that line is lost / miscounted.

src/harnessed/workspace/textscan.py scan_page: after clipping, ``reader.skip_rest_of_line()``
is called even when ``complete`` is True, i.e. the line's newline was already consumed.
"""

import uuid

import pytest

from harnessed.files.tools import file_tools
from harnessed.messages import ToolUseBlock
from harnessed.runtime import RuntimeContext
from harnessed.state.agent_state import AgentState
from harnessed.tools import ToolContext, Toolkit
from harnessed.workspace import MemoryFilesystem, Workspace

pytestmark = pytest.mark.asyncio


async def run(toolkit, name, **args):
    call = ToolUseBlock(id=f"call_{uuid.uuid4().hex[:8]}", name=name, input=args)

    def ctx(c):
        return ToolContext(
            agent_name="t",
            runtime=RuntimeContext(),
            state=AgentState("t", "default", "t"),
            call_id=c.id,
        )

    [result] = await toolkit.run_step([call], ctx)
    return result


async def test_second_line_is_not_lost_after_a_clipped_first_line():
    fs = MemoryFilesystem({"f.txt": "x" * 60_000 + "\nsecond\n"})
    page = await fs.read_lines("f.txt")
    assert page.clipped
    assert page.next_offset == 1, "line 2 exists, the page must say the file continues"
    assert page.total_lines == 2


async def test_total_lines_counts_the_line_after_a_clipped_one():
    fs = MemoryFilesystem({"f.txt": "x" * 60_000 + "\nsecond\nthird\n"})
    page = await fs.read_lines("f.txt")
    assert page.total_lines == 3


async def test_read_file_tool_tells_the_model_to_continue():
    toolkit = Toolkit(
        file_tools(Workspace(MemoryFilesystem({"f.txt": "x" * 60_000 + "\nsecret\n"})))
    )
    first = (await run(toolkit, "read_file", path="f.txt")).content
    assert "offset=1" in first, first[-300:]
    second = (await run(toolkit, "read_file", path="f.txt", offset=1)).content
    assert "secret" in second
