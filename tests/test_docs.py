"""The README is a front door (short, every docs page linked and present) and the
docs cite committed files that exist."""

import re

from conftest import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"


def test_readme_is_a_front_door():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for heading in ("## The two commands", "## Profiles", "## Beyond one machine"):
        assert heading in text
    assert "make run" in text and "make test" in text


def test_every_docs_page_is_linked_and_every_link_resolves():
    linked = set(re.findall(r"\]\((docs/[^)]+\.md)\)", README.read_text()))
    pages = {f"docs/{p.name}" for p in DOCS.glob("*.md") if p.name != "README.md"}
    assert linked == pages
    for page in DOCS.glob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+)\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name}: {target}"


def test_cited_result_files_exist():
    """Every concrete committed file a page cites (no placeholders; folders are
    often destinations) is there."""
    cited = set()
    for page in [README, *DOCS.glob("*.md")]:
        for path in re.findall(
            r"`((?:profiles/full/)?(?:reports|benchmarks/results)/[^`\s]+)`",
            page.read_text(encoding="utf-8"),
        ):
            if not re.search(r"[<{*]", path) and re.search(r"\.\w+$", path):
                cited.add(path)
    assert len(cited) > 10
    missing = sorted(p for p in cited if not (ROOT / p).exists())
    assert not missing, missing


def test_the_verdict_rule_is_stated_once_as_the_code_states_it():
    """docs/evaluation.md quotes the rule the report page prints, at the default
    params' verdicts section."""
    import yaml

    from firth.inference import Rule, rule_text

    v = yaml.safe_load((ROOT / "params.yaml").read_text())["verdicts"]
    rule = Rule(
        confidence=v["confidence"],
        resamples=v["resamples"],
        seed=v["seed"],
        min_items=v["min_items"],
    )
    text = (DOCS / "evaluation.md").read_text(encoding="utf-8")
    assert "> " + rule_text(rule) in text


def test_the_readme_findings_table_is_the_scorecards():
    """README's findings table is `firth scorecard --markdown --repo profiles/full
    --beside .` (columns named full, default) on the committed files, verbatim."""
    from typer.testing import CliRunner

    from firth.cli import app

    res = CliRunner().invoke(
        app,
        [
            "scorecard",
            "--markdown",
            "--repo",
            str(ROOT / "profiles" / "full"),
            "--beside",
            str(ROOT),
        ],
    )
    assert res.exit_code == 0, res.output
    assert res.output.strip() in README.read_text(encoding="utf-8")
