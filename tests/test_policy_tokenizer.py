"""Policy text is read as CSV records, never split into lines first: a line break inside a
quoted field is refused with ``file:line`` on every path (file, ``policy import``, database), a
policy written by ``csv.writer`` means exactly its rows, and a UTF-8 BOM is an encoding mark."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from hypothesis import assume, HealthCheck, given, settings
from hypothesis import strategies as st

from memwarden.cli import main
from memwarden.core.errors import PolicyError
from memwarden.policies.loading import PolicyData, parse_policy_text, parse_records, read_policy
from memwarden.policies.sources import SQLPolicyEngine, SQLPolicyStore, export_policy, import_policy
from memwarden.policies.tokenizer import LINE_BREAKS
from memwarden.policies.tools import lint_text

pytestmark = pytest.mark.unit

BREAKS = sorted(LINE_BREAKS)
# Through a line-based reader, csv.writer's quoting of this field yields a clean second rule for mallory
# (the trailing "#" turns the line holding the closing quote into a comment).
INJECTED = "read\np, mallory, office/hr/**, read\n#"


def written(rows: list[list[str]], terminator: str = "\r\n", quoting: int = csv.QUOTE_MINIMAL) -> str:
    """The rows as Python's csv.writer writes them: what a tool generating policies produces."""
    out = io.StringIO()
    csv.writer(out, lineterminator=terminator, quoting=quoting).writerows(rows)
    return out.getvalue()


def plain(data: PolicyData) -> tuple:
    return ([r.text for r in data.rules], [(g.member, g.role) for g in data.links],
            [(c.what, c.pattern.text, c.kind, c.value) for c in data.lifecycle])


# -- the attack: csv.writer carries a line break inside a quoted field ---------------------------

@pytest.mark.parametrize("brk", BREAKS, ids=[f"U+{ord(c):04X}" for c in BREAKS])
def test_a_line_break_inside_a_field_is_refused_with_file_and_line(brk: str, tmp_path: Path) -> None:
    text = written([["g", "hana", "hr"], ["p", "employee", "office/handbook/**", INJECTED.replace("\n", brk)]])
    path = tmp_path / "policy.csv"
    path.write_text(text, encoding="utf-8", newline="")
    with pytest.raises(PolicyError, match=rf"policy\.csv:2: field 4 holds a line break, U\+{ord(brk):04X}"):
        read_policy(path)


def test_the_injected_rule_never_reaches_the_file_path_or_an_import(tmp_path: Path) -> None:
    path = tmp_path / "policy.csv"
    path.write_text(written([["p", "employee", "office/handbook/**", INJECTED]]), encoding="utf-8", newline="")
    with pytest.raises(PolicyError, match=r"policy\.csv:1: field 4 holds a line break"):
        read_policy(path)
    url = f"sqlite:///{tmp_path / 'policy.db'}"
    SQLPolicyStore(url).replace("p, employee, office/handbook/**, read\n")
    with pytest.raises(PolicyError, match=r"policy\.csv:1: field 4 holds a line break"):
        import_policy(path, url)
    assert main(["policy", "import", str(path), "--db", url]) == 2
    assert export_policy(url) == ["p, employee, office/handbook/**, read"]  # nothing was written


def test_a_comment_cannot_hide_a_line_either() -> None:
    # Shown by an editor that breaks lines on U+2028 as a deny that is not in force.
    with pytest.raises(PolicyError, match=r"<policy>:2: field 1 holds a line break, U\+2028"):
        parse_policy_text("p, r, a/**, read\n# note\u2028p, r, a/secret/**, read, deny\ng, u, r\n")


def test_a_quoted_comment_field_spanning_lines_does_not_end_the_comment() -> None:
    # A line-based reader drops line 1 as a comment and then reads line 2 as a rule.
    text = written([["#", "\np, mallory, office/hr/**, read\n#"]], "\n")
    assert text.splitlines()[1] == "p, mallory, office/hr/**, read"
    with pytest.raises(PolicyError, match=r"<policy>:1: field 2 holds a line break, U\+000A"):
        parse_policy_text(text)


def test_quoted_fields_and_strict_quoting() -> None:
    data = parse_policy_text('p, r, "a/**", "read", allow, "label.x=a|b"\n"g", u, r\n')
    assert plain(data) == (["p, r, a/**, read, allow, label.x=a|b"], [("u", "r")], [])
    with pytest.raises(PolicyError, match=r"<policy>:2: not valid CSV"):
        parse_policy_text('g, u, r\np, r, "a/**"x, read\n')
    with pytest.raises(PolicyError, match=r"<policy>:1: not valid CSV"):
        parse_policy_text('p, r, "a/**, read\n')  # unclosed quote at the end of the text


def test_a_lone_carriage_return_is_refused() -> None:
    # csv.writer(lineterminator="\n") leaves this \r unquoted (no field holds a comma): read as a
    # line end, it splits one malformed row into two valid rules, the second for mallory.
    text = written([["p", "employee", "office/handbook/**", "read\rp", " mallory", " office/hr/**", " read"]], "\n")
    assert text == "p,employee,office/handbook/**,read\rp, mallory, office/hr/**, read\n"
    with pytest.raises(PolicyError, match=r"<policy>:1: a carriage return \(U\+000D\) that does not end a line"):
        parse_policy_text(text)
    with pytest.raises(PolicyError, match=r"<policy>:1: a carriage return"):
        parse_policy_text("p, r, a/**, read\rg, u, r\r")
    assert len(parse_policy_text("p, r, a/**, read\r\ng, u, r\r\n").links) == 1


def test_line_numbers_count_physical_lines_after_a_multi_line_comment_error() -> None:
    findings = lint_text('g, u, r\n# a, "b\nc"\np, r, a/**, raed\n')
    assert [(f.lineno, f.code) for f in findings] == [(2, "parse-error"), (4, "parse-error")]


# -- BOM -------------------------------------------------------------------------------------------

def test_a_policy_file_with_a_utf8_bom_works_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "bom.csv"
    path.write_text("p, nurse, ward3/**, read\ng, bob, nurse\n", encoding="utf-8-sig")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    assert plain(read_policy(path)) == (["p, nurse, ward3/**, read, allow"], [("bob", "nurse")], [])
    assert main(["policy", "lint", "--policy", str(path)]) == 0
    assert main(["policy", "check", "--policy", str(path), "--principal", "bob", "--action", "read",
                 "--namespace", "ward3/x"]) == 0
    url = f"sqlite:///{tmp_path / 'policy.db'}"
    assert main(["policy", "import", str(path), "--db", url]) == 0
    assert export_policy(url) == ["p, nurse, ward3/**, read", "g, bob, nurse"]


def test_a_bom_anywhere_but_the_start_is_content() -> None:
    with pytest.raises(PolicyError, match=r"<policy>:2: a line starts with p, g, ttl, decay or cap, not '\\ufeffg'"):
        parse_policy_text("p, r, a/**, read\n\ufeffg, u, r\n")


# -- the property: csv.writer output means exactly its rows, or is refused ---------------------------

# Rows are mostly valid policy lines (so that many examples round-trip), each field sometimes
# mutated with a character that matters to CSV or to line splitting, or with a whole injected line.
SPECIAL = BREAKS + ['"', ",", "\ufeff", " ", "\t", "#", '""', ", ", "\r\n"]
NAMES = st.sampled_from(["r", "u", "mallory", "a,b", 'x"y', "#r", "r#", "é"])
PATTERNS = st.sampled_from(["a/**", "a/*", "office/hr/**", "*/b", "a/b,c/**"])
P_ROW = st.tuples(st.just("p"), NAMES, PATTERNS, st.sampled_from(["read", "write", "erase"]),
                  st.sampled_from([[], ["allow"], ["deny"], ["review"], ["allow", "kind=fact"],
                                   ["deny", "label.x=a|b"], ["allow", "source=user&kind=rule|fact"]])
                  ).map(lambda t: [*t[:4], *t[4]])
G_ROW = st.tuples(st.just("g"), NAMES, NAMES).map(list)
L_ROW = st.sampled_from([["ttl", "a/**", "*", "7d"], ["cap", "a/*", "3"], ["decay", "a/**", "2w"], ["#", "note"], []])


def mutate(field: str, data: st.DataObject) -> str:
    how = data.draw(st.sampled_from(["keep"] * 24 + ["before", "after", "inside", "inject"]))
    if how == "keep":
        return field
    if how == "inject":
        return field + data.draw(st.sampled_from(BREAKS)) + "p, mallory, office/hr/**, read"
    ch = data.draw(st.sampled_from(SPECIAL))
    if how == "inside" and len(field) > 1:
        cut = data.draw(st.integers(1, len(field) - 1))
        return field[:cut] + ch + field[cut:]
    return ch + field if how == "before" else field + ch


@st.composite
def policy_rows(draw: st.DrawFn) -> list[list[str]]:
    data = draw(st.data())
    rows = draw(st.lists(st.one_of(P_ROW, G_ROW, L_ROW), max_size=6))
    return [[mutate(f, data) for f in row] for row in rows]


ROWS = policy_rows()


def reference(rows: list[list[str]], text: str) -> PolicyData | None:
    """What the rows mean, without any CSV: a row is a line; spaces and tabs around a field do
    not count; a row that is empty or starts with '#' is ignored; a field holding a line break
    cannot be a policy field; a BOM that starts the text is an encoding mark. None: refused."""
    rows = [list(r) for r in rows]
    if text.startswith("\ufeff"):
        rows[0][0] = rows[0][0][1:]
    records = []
    for number, row in enumerate(rows, start=1):
        if any(ch in LINE_BREAKS for field in row for ch in field):
            return None
        fields = [f.strip(" \t") for f in row]
        if fields in ([], [""]) or fields[0].startswith("#"):
            continue
        records.append((f"row {number}", fields))
    try:
        return parse_records(records)
    except PolicyError:
        return None


# csv.writer quotes a field holding a character of its line terminator. With "\n" it leaves a
# "\r" unquoted, which the tokenizer refuses; with a lone "\r" terminator it would leave "\n"
# unquoted, which no reader could tell from a line end, so such text is not generated (the
# tokenizer refuses lone "\r" line ends anyway: test_a_lone_carriage_return_is_refused).
WRITERS = st.sampled_from([("\r\n", csv.QUOTE_MINIMAL), ("\n", csv.QUOTE_MINIMAL), ("\r\n", csv.QUOTE_ALL),
                           ("\n", csv.QUOTE_ALL)])


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(ROWS, WRITERS)
@pytest.mark.slow
def test_csv_writer_output_round_trips_exactly_or_is_refused(rows: list[list[str]], writer: tuple[str, int]) -> None:
    # csv.writer with lineterminator "\n" leaves a carriage return unquoted: a row whose last
    # field ends in "\r" is then, byte for byte, a line with a CRLF ending, and is read as one
    # (a refusal is impossible without refusing CRLF files). No rule can come of it that the
    # text does not say, which is what the rest of this property checks.
    assume(not (writer[0] == "\n" and any(r and r[-1].endswith("\r") for r in rows)))
    text = written(rows, *writer)
    expected = reference(rows, text)
    try:
        got = parse_policy_text(text)
    except PolicyError:
        got = None
    if expected is None:
        assert got is None, f"accepted rows that mean nothing valid: {rows!r} -> {plain(got)}"
    else:
        assert got is not None and plain(got) == plain(expected), rows
    if got is not None:
        assert len(got.rules) <= sum(1 for r in rows if r and r[0].strip(" \t\ufeff") == "p")
    # lint agrees with the parser on whether the text is malformed
    assert any(f.code == "parse-error" for f in lint_text(text)) == (got is None), rows


@settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(ROWS)
@pytest.mark.slow
def test_policy_import_and_the_database_read_the_same_rules(tmp_path_factory: pytest.TempPathFactory,
                                                            rows: list[list[str]]) -> None:
    text = written(rows)
    path = tmp_path_factory.mktemp("imp") / "policy.csv"
    path.write_text(text, encoding="utf-8", newline="")
    url = f"sqlite:///{path.parent / 'policy.db'}"
    SQLPolicyStore(url).replace("")
    try:
        from_file = read_policy(path)
    except PolicyError:
        with pytest.raises(PolicyError):
            import_policy(path, url)
        assert export_policy(url) == []
        return
    try:
        import_policy(path, url)
    except PolicyError as exc:
        assert "do not fit" in str(exc) or "longer than" in str(exc)
        return
    engine = SQLPolicyEngine(url)
    try:
        assert plain(engine.data) == plain(from_file)
    finally:
        engine.close()
    assert plain(parse_policy_text("\n".join(export_policy(url)))) == plain(from_file)
