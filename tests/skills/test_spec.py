"""The Agent Skills format: every rule, real-world shapes, agreement with ``skills-ref``."""

from __future__ import annotations

from pathlib import Path

import pytest
import skills_ref

from harnessed.skills import SkillFormatError, parse_skill_md, validate_skill_dir
from tests.skills.samples import INVALID, VALID, write_skill


@pytest.mark.parametrize("folder", sorted(VALID))
def test_published_shapes_load_unchanged(folder: str) -> None:
    meta, _ = parse_skill_md(VALID[folder], folder)
    assert meta.name == folder
    assert meta.description


def test_fields_are_read_as_written() -> None:
    meta, body = parse_skill_md(VALID["pdf-processing"], "pdf-processing")
    assert meta.description.startswith("Extract text and tables")
    assert meta.license == "Proprietary. LICENSE.txt has complete terms"
    assert meta.metadata == {"author": "example-org", "version": "1.0"}
    assert meta.allowed_tools == ("Bash(python3:*)", "Read")
    assert body.startswith("# PDF processing")
    release, _ = parse_skill_md(VALID["release-notes"], "release-notes")
    assert release.metadata == {"version": "1.10", "internal": "yes"}  # not 1.1 / True
    git, _ = parse_skill_md(VALID["git-helper"], "git-helper")
    assert git.allowed_tools == ("Bash(git status:*)", "Bash(git diff:*)", "Read", "Grep")


@pytest.mark.parametrize("case", sorted(INVALID))
def test_each_rule_is_enforced_and_named(case: str) -> None:
    folder, text, words = INVALID[case]
    with pytest.raises(SkillFormatError) as caught:
        parse_skill_md(text, folder)
    assert words in str(caught.value)


def test_all_broken_rules_are_reported_together() -> None:
    text = "---\nname: Bad--Name-\nfoo: 1\n---\n"
    with pytest.raises(SkillFormatError) as caught:
        parse_skill_md(text, "elsewhere")
    problems = " | ".join(caught.value.problems)
    for words in (
        "unknown field(s) foo",
        "lower case",
        "two hyphens",
        "start or end",
        "differs from",
        "'description' is missing",
    ):
        assert words in problems


def test_metadata_must_map_names_to_text() -> None:
    text = "---\nname: meta\ndescription: x\nmetadata:\n  nested:\n    a: b\n---\n"
    with pytest.raises(SkillFormatError, match="'metadata' must map names to text"):
        parse_skill_md(text, "meta")


def test_yaml_tags_never_build_objects() -> None:
    text = "---\nname: tagged\ndescription: !!python/object/apply:os.system ['echo hi']\n---\n"
    with pytest.raises(SkillFormatError):
        parse_skill_md(text, "tagged")


@pytest.mark.parametrize(
    ("folder", "text"),
    [*((f, t) for f, t in VALID.items()), *((f, t) for f, t, _ in INVALID.values())],
)
def test_agrees_with_the_reference_validator(tmp_path: Path, folder: str, text: str) -> None:
    """``skills-ref`` (the standard's reference library) and ours accept the same folders."""
    path = write_skill(tmp_path, folder, text)
    reference_ok = skills_ref.validate(path) == []
    try:
        validate_skill_dir(path)
        ours_ok = True
    except SkillFormatError:
        ours_ok = False
    assert ours_ok == reference_ok, skills_ref.validate(path)


def test_validate_skill_dir_names_missing_pieces(tmp_path: Path) -> None:
    with pytest.raises(SkillFormatError, match="does not exist"):
        validate_skill_dir(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SkillFormatError, match=r"has no SKILL\.md"):
        validate_skill_dir(tmp_path / "empty")
