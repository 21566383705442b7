"""The exercise contract holds for every notebook: suites, catalogues and solutions agree."""
from __future__ import annotations

import ast
import importlib
from collections import Counter

import pytest

from grader.judge.proxy import SUITES_DIR, known_suites
from grader.notebook.read import EXERCISE_TAG, read_notebook, tags, top_level_names
from tests.conftest import SOLUTIONS, solution_notebooks


def _suite_tests(suite: str) -> list[dict]:
    """Each test function of a suite with its exercise marker's arguments (read from the AST)."""
    tree = ast.parse((SUITES_DIR / f"test_{suite}.py").read_text())
    found = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
            continue
        info = {"name": node.name, "doc": ast.get_docstring(node), "exercise": None,
                 "property": any(isinstance(d, ast.Call) and ast.unparse(d.func).endswith("given")
                                 for d in node.decorator_list)}
        for decorator in node.decorator_list:
            if isinstance(decorator, ast.Call) and ast.unparse(decorator.func) == "pytest.mark.exercise":
                info["exercise"] = ast.literal_eval(decorator.args[0])
                info.update({kw.arg: ast.literal_eval(kw.value) for kw in decorator.keywords})
        found.append(info)
    return found


@pytest.mark.parametrize("path", solution_notebooks(), ids=lambda p: p.stem)
def test_every_solution_has_a_suite_and_catalogue(path):
    assert path.stem in known_suites()
    importlib.import_module(f"tests.catalogue.{path.stem}")


@pytest.mark.parametrize("suite", known_suites())
def test_suite_follows_the_contract(suite):
    tests = _suite_tests(suite)
    notebook = read_notebook(SOLUTIONS / f"{suite}.ipynb")
    exercises = set()
    for cell in notebook.cells:
        if cell.cell_type == "code" and EXERCISE_TAG in tags(cell):
            names = {n for n in top_level_names(cell.source) if not n.startswith("_")}
            assert len(names) == 1, cell.source[:120]
            exercises |= names
    assert tests
    for test in tests:
        assert test["exercise"] in exercises, f"{test['name']} grades an unknown exercise"
        assert test["doc"], f"{test['name']} needs a docstring (it is the learner's feedback)"
        # 0 points only for an informational test (e.g. a benchmark that needs a GPU)
        assert test.get("points", 1) > 0 or test.get("informational"), f"{test['name']} is worth no points"
    public = Counter(t["exercise"] for t in tests if t.get("public"))
    total = Counter(t["exercise"] for t in tests)
    properties = Counter(t["exercise"] for t in tests if t["property"])
    for exercise in exercises:
        assert public[exercise] >= 1, f"{exercise} has no public check"
        assert total[exercise] > public[exercise], f"{exercise} needs hidden tests beyond the public ones"
        assert properties[exercise] >= 1, f"{exercise} needs a property test (@given) over its inputs"
    catalogue = importlib.import_module(f"tests.catalogue.{suite}").WRONG_ANSWERS
    per_exercise = Counter(w.exercise for w in catalogue)
    for exercise in exercises:
        assert per_exercise[exercise] >= 4, f"{exercise} has {per_exercise[exercise]} wrong answers; 4 needed"
    assert set(per_exercise) <= exercises


@pytest.mark.parametrize("path", solution_notebooks(), ids=lambda p: p.stem)
def test_each_exercise_cell_is_followed_by_its_check(path):
    notebook = read_notebook(path)
    cells = notebook.cells
    for index, cell in enumerate(cells):
        if cell.cell_type == "code" and EXERCISE_TAG in tags(cell):
            name = next(n for n in top_level_names(cell.source) if not n.startswith("_"))
            following = next(c for c in cells[index + 1:] if c.cell_type == "code")
            assert f'check("{name}")' in following.source, f"add check(\"{name}\") after its cell"


def _suite_module(suite: str, config: pytest.Config):
    """The hidden suite ``suite`` imported as a module (its ``exercise`` marker registered), to read
    its constants."""
    import importlib.util

    config.addinivalue_line("markers", "exercise: a hidden test's exercise (the suites' marker)")
    spec = importlib.util.spec_from_file_location(f"stored_{suite}", SUITES_DIR / f"test_{suite}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_stored_band_errors_are_measured_again(pytestconfig):
    """Suite 02's NAMED_BAND_ERRORS are what _measure_band_errors measures (exact: means of whole
    numbers over powers of two)."""
    suite = _suite_module("02_sinusoidal_encoding", pytestconfig)
    assert len(suite.NAMED_BAND_ERRORS) == 6
    for (sigma, num_positions), stored in suite.NAMED_BAND_ERRORS.items():
        assert suite._measure_band_errors(sigma, num_positions, 512) == stored, (sigma, num_positions)


def test_stored_ntk_references_are_the_model_s(pytestconfig):
    """Suite 05's NTK_REFERENCES, NTK-aware's losses that set test_rule_over_scales' thresholds, are
    what the model computes, to the last digit of the threshold they set."""
    suite = _suite_module("05_context_extension", pytestconfig)
    assert set(suite.NTK_REFERENCES) == set(suite._OTHER_SCALES)
    for scale, stored in suite.NTK_REFERENCES.items():
        computed = suite._ntk_reference(scale, int(128 * scale))
        assert computed == pytest.approx(stored, abs=1e-5), scale
        assert round(computed + 0.03, 3) == round(stored + 0.03, 3), scale


def test_layout_scoring_by_blocks_is_the_fixtures_accuracy(pytestconfig):
    """Suite 03 scores share_width's layouts a block of rows at a time: the same accuracy as
    fixtures._accuracy on the largest held-out setting (16,384 rows, 512 classes) and a small one."""
    import torch

    from grader.fixtures import addition_vs_concatenation as fixtures

    suite = _suite_module("03_addition_vs_concatenation", pytestconfig)
    generator = torch.Generator().manual_seed(0)
    for rows, width, classes in ((16384, 24, 512), (300, 5, 7)):
        x = torch.randn(rows, width, generator=generator, dtype=torch.float64)
        labels = torch.randint(classes, (rows,), generator=generator)
        weights = fixtures.lda_probe(x + torch.randn(rows, width, generator=generator, dtype=torch.float64), labels)
        assert suite._accuracy_by_blocks(x, labels, weights) == fixtures._accuracy(x, labels, weights)


def test_share_width_layouts_are_asked_once_per_learner_run(pytestconfig):
    """Suite 03's threshold tests read the learner's layouts through one store per run: a setting
    already answered is not asked again (its form still checked on every read), and a setting whose
    call raised is asked again."""
    import torch

    suite = _suite_module("03_addition_vs_concatenation", pytestconfig)
    asked = []

    class Learner:
        def share_width(self, d_model, vocab_size, num_positions, noise_std):
            asked.append((d_model, vocab_size, num_positions, noise_std))
            if noise_std > 1:
                raise RuntimeError("this setting fails")
            return d_model // 2, torch.ones(num_positions, d_model, dtype=torch.float64)

    store, learner = {}, Learner()
    for _ in range(2):
        d_tok, table = suite._layout(learner, 8, 16, 4, 0.5, store=store)
        assert d_tok == 4 and table.shape == (4, 8)
        with pytest.raises(RuntimeError):
            suite._layout(learner, 8, 16, 4, 1.5, store=store)
    assert asked == [(8, 16, 4, 0.5), (8, 16, 4, 1.5), (8, 16, 4, 1.5)]
    store[(8, 16, 4, 0.5)] = (9, table)  # a stored answer of the wrong form is still rejected
    with pytest.raises(AssertionError, match="d_tok"):
        suite._layout(learner, 8, 16, 4, 0.5, store=store)


def test_stored_matching_pairs_are_scanned_again(pytestconfig):
    """Suite 04's MATCHING_PAIRS, the counts of its named hidden cases, are what _usable_pairs scans
    (every offset, float64), and every case stays clear of the boundary. The cases beyond a scan
    (LONG_CONTEXTS) hold _usable_pairs_exact's count, which agrees with the scan on every other case."""
    suite = _suite_module("04_rotary_embeddings", pytestconfig)
    assert len(suite.MATCHING_PAIRS) == 11 and set(suite.LONG_CONTEXTS) < set(suite.MATCHING_PAIRS)
    for case, stored in suite.MATCHING_PAIRS.items():
        assert suite._usable_pairs_exact(*case) == stored, case
        if case not in suite.LONG_CONTEXTS:
            assert suite._usable_pairs(*case) == stored, case
        assert suite._clear_of_the_boundary(*case), case


def test_fair_protocol_verdicts_are_asked_once_per_learner_run(pytestconfig):
    """Suite 03's verdict test reads the verdicts earlier tests of is_fair_protocol obtained on the same
    protocols: a protocol already judged is not handed over again, a call that raised is not kept, and
    a protocol with hidden arguments is always handed over."""
    suite = _suite_module("03_addition_vs_concatenation", pytestconfig)
    handed = []

    class Learner:
        def black_box(self, function, signature, **hidden):
            return (function, tuple(sorted(hidden.items())))

        def is_fair_protocol(self, protocol):
            handed.append(protocol)
            if protocol[0] is suite.hidden.best_of_splits:
                raise RuntimeError("this protocol fails")
            return protocol[0] is suite.hidden.fair_split

    learner, verdicts = Learner(), {}
    assert suite._verdict(learner, suite.hidden.fair_split, verdicts) is True
    assert suite._verdict(learner, suite.hidden.fair_split, verdicts) is True
    for _ in range(2):
        with pytest.raises(RuntimeError):
            suite._verdict(learner, suite.hidden.best_of_splits, verdicts)
    for _ in range(2):
        suite._expect_verdict(learner, suite.hidden.fair_split, True, "splits", verdicts=verdicts, seed=3)
    with pytest.raises(AssertionError, match="judged leaky"):
        suite._expect_verdict(learner, suite.hidden.fit_on_all_rows, True, "fits on all rows", verdicts=verdicts)
    assert handed == [(suite.hidden.fair_split, ()), (suite.hidden.best_of_splits, ()),
                      (suite.hidden.best_of_splits, ()), (suite.hidden.fair_split, (("seed", 3),)),
                      (suite.hidden.fair_split, (("seed", 3),)), (suite.hidden.fit_on_all_rows, ())]
    assert verdicts == {suite.hidden.fair_split: True, suite.hidden.fit_on_all_rows: False}


def test_hidden_rotary_tables_do_not_depend_on_the_block_size(monkeypatch):
    """Notebook 05's hidden rotary modules compute their tables ROWS_AT_ONCE rows at a time: the same
    float32 tables, bit for bit, as in one pass, for every method and bug, lengths that end inside a
    block, and no rows at all."""
    import torch

    from grader.judge.hidden import context_extension as hidden

    bugs = {"PI": (None, "scaled twice"), "dynamic NTK": (None, "stale base"),
            "YaRN": (None, "scaled twice", "wrong original length"),
            "Llama 3": (None, "scaled twice", "wrong original length", "reversed ramp")}
    cases = [(seq_len, method, bug) for method, names in bugs.items() for bug in names for seq_len in (2500, 1)]
    cases.append((0, "YaRN", None))
    config = {"head_dim": 96, "base": 2e5, "scale": 6.0, "original_max_position_embeddings": 1024}
    blockwise = [hidden.scaled_rope(n, method=m, bug=b, **config) for n, m, b in cases]
    monkeypatch.setattr(hidden, "ROWS_AT_ONCE", 10**6)
    for (n, m, b), got in zip(cases, blockwise):
        for table, want in zip(got, hidden.scaled_rope(n, method=m, bug=b, **config)):
            assert table.dtype == torch.float32 and table.shape == (n, 96) and table.is_contiguous()
            assert torch.equal(table, want), (n, m, b)


def test_context_lm_loss_does_not_depend_on_the_pass_size(monkeypatch):
    """Notebook 05's judge runs the tiny LM TOKENS_AT_ONCE tokens at a time: three windows of 1,024
    characters (two passes, the second one short) give the loss of one pass over all three, to float32
    rounding."""
    from grader.judge import context_lm

    inv_freq = context_lm.default_inv_freq() / 3.0
    assert 1024 <= context_lm.TOKENS_AT_ONCE < 3 * 1024
    by_passes = context_lm.held_out_loss(inv_freq, 1.1, 1024, (5, 17, 40))
    monkeypatch.setattr(context_lm, "TOKENS_AT_ONCE", 10**6)
    assert by_passes == pytest.approx(context_lm.held_out_loss(inv_freq, 1.1, 1024, (5, 17, 40)), rel=1e-6, abs=0)


def test_rope_diagnoses_are_asked_once_per_learner_run(pytestconfig):
    """Suite 05's diagnose_rope tests read the learner's diagnoses through one store per run: a case
    already answered is not handed over again (its answer still judged on every read), a case whose
    call raised is asked again, and the named tests ask the public case only after a named case failed."""
    suite = _suite_module("05_context_extension", pytestconfig)
    asked = []

    class Learner:
        def black_box(self, function, signature, **hidden):
            return hidden

        def diagnose_rope(self, rotary, method, head_dim, base, scale, original):
            asked.append((method, rotary["bug"], head_dim))
            if rotary["bug"] == "scaled twice":
                raise RuntimeError("this case fails")
            return "correct"

    learner, store, config = Learner(), {}, suite._CONFIGS[4]
    for _ in range(2):
        suite._expect_diagnosis(learner, "PI", None, *config, store=store)
        with pytest.raises(RuntimeError):
            suite._diagnose(learner, "PI", "scaled twice", *config, store=store)
    assert asked == [("PI", None, 96), ("PI", "scaled twice", 96), ("PI", "scaled twice", 96)]
    assert store == {("PI", None, *config): "correct"}
    store[("PI", None, *config)] = "stale base"  # a stored answer is still judged
    with pytest.raises(AssertionError, match="called it 'stale base'"):
        suite._expect_diagnosis(learner, "PI", None, *config, store=store)
    asked.clear()
    suite._check_cases(learner, None, {})  # every named case right: the public case is not asked
    assert ("Llama 3", None, 128) not in asked and len(asked) == len(suite.NAMED_DIAGNOSES[None])
