"""The Agent Skills format: every rule, real-world shapes, agreement with ``skills-ref``."""

from __future__ import annotations

from pathlib import Path

import pytest
import skills_ref

from harnessed.skills import SkillFormatError, parse_skill_md, validate_skill_dir
from tests.skills.samples import INVALID, LOWER_CASE_FILE, VALID, write_skill


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
        parse_skill_md(text, folder, strict=True)
    assert words in str(caught.value)
    if case in SOFT:  # a published skill may break it: it loads, with a note naming the rule
        meta, _ = parse_skill_md(text, folder)
        assert meta.name == folder
        assert any(words in note and "soft limit" in note for note in meta.notes)
    else:
        with pytest.raises(SkillFormatError):
            parse_skill_md(text, folder)


SOFT = {
    "too long name",
    "too long description",
    "too long compatibility",
    "compatibility not text",
    "unknown field",
}


def test_all_broken_rules_are_reported_together() -> None:
    text = "---\nname: Bad--Name-\nfoo: 1\n---\n"
    with pytest.raises(SkillFormatError) as caught:
        parse_skill_md(text, "elsewhere", strict=True)
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


def test_non_text_fields_load_normalized_with_notes() -> None:
    """The reference accepts these shapes; they load, stored as text, and say so."""
    meta, _ = parse_skill_md(VALID["rich-metadata"], "rich-metadata")
    assert meta.metadata == {
        "version": "2",
        "tags": '["docs", "office"]',
        "owner": '{"team": "docs"}',
    }
    assert any("owner, tags" in note for note in meta.notes)
    odd, _ = parse_skill_md(VALID["odd-fields"], "odd-fields")
    assert odd.license == '["MIT", "Apache-2.0"]'
    assert odd.metadata == {}
    assert odd.allowed_tools == ()  # a map of tools grants nothing
    assert len(odd.notes) == 3
    plain, _ = parse_skill_md(VALID["minimal"], "minimal")
    assert plain.notes == ()


def test_public_collection_shapes_read_as_written() -> None:
    docx, _ = parse_skill_md(VALID["docx-editing"], "docx-editing")
    assert len(docx.description) > 350 and "\n" not in docx.description
    assert docx.license == "Proprietary. LICENSE.txt has complete terms"
    assert docx.allowed_tools == ("Read", "Write", "Bash")
    wrapped, _ = parse_skill_md(VALID["plain-wrapped"], "plain-wrapped")
    assert wrapped.description.endswith("goes on over a second line without any block indicator.")


def test_lower_case_skill_file_is_found_and_noted(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "lower-file", LOWER_CASE_FILE["lower-file"], "skill.md")
    meta = validate_skill_dir(folder)
    assert meta.name == "lower-file"
    assert "skill.md" in meta.notes[0]


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
    _assert_agreement(write_skill(tmp_path, folder, text))


@pytest.mark.parametrize("folder", sorted(LOWER_CASE_FILE))
def test_agrees_with_the_reference_on_lower_case_files(tmp_path: Path, folder: str) -> None:
    _assert_agreement(write_skill(tmp_path, folder, LOWER_CASE_FILE[folder], "skill.md"))


def _assert_agreement(path: Path) -> None:
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
