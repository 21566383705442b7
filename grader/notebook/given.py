"""Which stored outputs of a solution notebook its released notebook keeps: the *given* cells'.

A code cell's outputs are *given* when they do not depend on any exercise's answer: the released
notebook keeps them (and the website shows them), so a reader sees the chapter's figures and
tables before running anything. The rule is conservative and explicit; a cell is one of:

``given``
    a code cell that is not an exercise cell, holds no solution region (an experiment region), is
    not tagged ``instructor``, and reads no *learner-dependent* name, directly or through a
    function or value that an earlier cell defined from one. Its outputs are kept.
``expected``
    a cell that reads learner-dependent names of ``implement`` exercises only (a figure of the
    learner's own sinusoidal table, say). Its outputs are cleared; where the solution's drew a
    figure, the released cell holds :data:`EXPECTED_PLACEHOLDER` and the solution's figure (what a
    correct implementation draws: it states no thinking exercise's answer, since no released cell
    computes one).
``learner``
    every other code cell: an exercise cell, a cell with a solution region, a cell tagged
    ``instructor``, and a cell that reads a name that depends on a thinking exercise (``measure``,
    ``interpret``, ``diagnose``, ``challenge``), on a solution region, on an instructor cell or on
    ``check`` (the public checks' verdict is the learner's). Its outputs are cleared; where the
    solution's drew a figure, the released cell holds :data:`LEARNER_PLACEHOLDER` only.
``exercise``
    an exercise cell: its outputs are cleared.

Learner-dependent names, cell by cell in notebook order (:func:`classify`): the names an exercise
cell defines; every name a learner cell or an expected cell binds (assignment, ``def``, ``class``,
``for``, ``with``, ``global`` in a function); the names such a cell changes in place (``x[i] = ``,
``x.a = ``, ``x.method(...)``, ``generator=x``), except imported modules. A function carries the
names its body reads: calling it reads them at the call. A later plain binding of the name (in a
given cell) makes it given again.

Tags override the analysis, one cell at a time: ``learner-output`` makes a cell ``learner`` (for an
output the analysis cannot see depends on the learner, or one that would state an answer);
``given-output`` makes a cell ``given`` and the names it binds given (for a false alarm; an
exercise cell or a cell with a solution region cannot be given).
"""
from __future__ import annotations

import ast
import symtable
from dataclasses import dataclass

from grader.errors import GraderError
from grader.notebook.read import EXERCISE_TAG, INSTRUCTOR_TAG, tags, to_python

GIVEN, EXPECTED, LEARNER, EXERCISE = "given", "expected", "learner", "exercise"
GIVEN_TAG, LEARNER_TAG = "given-output", "learner-output"
BEGIN_SOLUTION = "### BEGIN SOLUTION"
IMPLEMENT, ANSWER = "implement", "answer"
"""What a learner-dependent name depends on: ``implement`` exercises only, or a learner's answer."""
LEARNER_SOURCES = {"check": ANSWER}
"""Names that are learner-dependent in every notebook: ``check`` prints the public checks' verdict."""

LEARNER_PLACEHOLDER = "*Your figure appears here when you run the cell.*"
EXPECTED_PLACEHOLDER = ("*Your figure appears here when you run the cell. Below: the figure that a "
                        "correct implementation draws, to compare with yours.*")


@dataclass(frozen=True)
class CellOutputs:
    """What the released notebook keeps of one solution cell's outputs."""

    kind: str
    """``given``, ``expected``, ``learner`` or ``exercise`` (see the module's docstring); ``""`` for
    markdown."""
    because: str = ""
    """Why, in a few words: the learner-dependent names it reads, or the tag or region."""


def _images(cell) -> list:
    return [o for o in cell.get("outputs", [])
            if o.get("output_type") in ("display_data", "execute_result") and "image/png" in o.get("data", {})]


def _placeholder(text: str):
    import nbformat

    return nbformat.v4.new_output("display_data", data={"text/markdown": text, "text/plain": text})


def released_outputs(cell, decision: CellOutputs) -> list:
    """The outputs that the released copy of solution ``cell`` holds, by ``decision`` (new nodes,
    without execution counts: the released cells have none)."""
    import nbformat

    def copy(output):
        output = nbformat.from_dict(output)
        if "execution_count" in output:
            output.execution_count = None
        return output

    if decision.kind == GIVEN:
        return [copy(o) for o in cell.get("outputs", [])]
    images = _images(cell)
    if not images or decision.kind == EXERCISE:
        return []
    if decision.kind == EXPECTED:
        return [_placeholder(EXPECTED_PLACEHOLDER), *(copy(o) for o in images)]
    return [_placeholder(LEARNER_PLACEHOLDER)]


MUTATORS = frozenset({
    "append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "setdefault",
    "sort", "reverse", "add", "discard", "manual_seed", "seed", "set_state", "load_state_dict",
    "train", "eval", "step", "zero_grad", "backward", "to", "cuda", "cpu", "register_buffer",
    "apply", "write", "close", "send"})
"""Methods that change their object (with every method whose name ends in ``_``, PyTorch's in-place
convention): a learner cell that calls one on a name makes that name learner-dependent."""


class _Names(ast.NodeVisitor):
    """Names a cell changes in place, and the names its imports bind."""

    def __init__(self) -> None:
        self.changed: set[str] = set()
        self.imported: set[str] = set()

    @staticmethod
    def _root(node) -> str | None:
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    def _store(self, target) -> None:
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            root = self._root(target)
            if root:
                self.changed.add(root)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._store(element)
        elif isinstance(target, ast.Starred):
            self._store(target.value)

    def visit_Assign(self, node) -> None:
        for target in node.targets:
            self._store(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node) -> None:
        self._store(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node) -> None:
        for target in node.targets:
            self._store(target)
        self.generic_visit(node)

    def visit_Call(self, node) -> None:
        if isinstance(node.func, ast.Attribute) and (node.func.attr in MUTATORS
                                                     or node.func.attr.endswith("_")):
            root = self._root(node.func.value)
            if root:
                self.changed.add(root)  # x.append(...), model.eval(), gen.manual_seed(...)
        for keyword in node.keywords:
            if keyword.arg == "generator" and isinstance(keyword.value, ast.Name):
                self.changed.add(keyword.value.id)  # the draw advances the generator
        self.generic_visit(node)

    def visit_Import(self, node) -> None:
        for alias in node.names:
            self.imported.add((alias.asname or alias.name).split(".")[0])

    def visit_ImportFrom(self, node) -> None:
        for alias in node.names:
            self.imported.add(alias.asname or alias.name)


@dataclass
class _Cell:
    imports: set[str]
    reads: set[str]
    binds: set[str]
    changes: set[str]
    functions: dict[str, set[str]]
    """Each function or class the cell defines at top level -> the global names its body reads."""


def _global_reads(table: symtable.SymbolTable) -> set[str]:
    """Global names read anywhere in a function's (or class's) scope and the scopes inside it."""
    reads = {s.get_name() for s in table.get_symbols()
             if s.is_referenced() and (s.is_global() or s.is_declared_global())}
    for child in table.get_children():
        reads |= _global_reads(child)
    return reads


def _declared_global_binds(table: symtable.SymbolTable) -> set[str]:
    binds = {s.get_name() for s in table.get_symbols() if s.is_declared_global() and s.is_assigned()}
    for child in table.get_children():
        binds |= _declared_global_binds(child)
    return binds


class _Flow(ast.NodeVisitor):
    """The names a cell reads before it binds them itself, in the order Python runs it.

    A function's or a class's body counts as read where it is defined (``scopes``: its global
    reads, from :mod:`symtable`); a comprehension's and a lambda's own names are their own."""

    def __init__(self, scopes: dict[str, set[str]]) -> None:
        self.scopes = scopes
        self.bound: set[str] = set()
        self.external: set[str] = set()

    def visit_Name(self, node) -> None:
        if isinstance(node.ctx, ast.Load):
            if node.id not in self.bound:
                self.external.add(node.id)
        else:
            self.bound.add(node.id)

    def visit_Assign(self, node) -> None:
        self.visit(node.value)
        for target in node.targets:
            self.visit(target)

    def visit_AnnAssign(self, node) -> None:
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.target)

    def visit_AugAssign(self, node) -> None:
        self.visit(node.value)
        if isinstance(node.target, ast.Name):
            self.visit(ast.Name(node.target.id, ast.Load()))
        self.visit(node.target)

    def visit_NamedExpr(self, node) -> None:
        self.visit(node.value)
        self.visit(node.target)

    def visit_For(self, node) -> None:
        self.visit(node.iter)
        self.visit(node.target)
        for statement in node.body + node.orelse:
            self.visit(statement)

    visit_AsyncFor = visit_For

    def visit_With(self, node) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self.visit(item.optional_vars)
        for statement in node.body:
            self.visit(statement)

    visit_AsyncWith = visit_With

    def _defined(self, node, parts) -> None:
        for part in parts:
            self.visit(part)
        self.external |= self.scopes.get(node.name, set()) - self.bound
        self.bound.add(node.name)

    def visit_FunctionDef(self, node) -> None:
        arguments = node.args
        self._defined(node, [*node.decorator_list, *arguments.defaults,
                             *(d for d in arguments.kw_defaults if d is not None)])

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node) -> None:
        self._defined(node, [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)])

    def _own_scope(self, node, bind, body) -> None:
        outer = set(self.bound)
        bind()
        for part in body:
            self.visit(part)
        self.bound = outer

    def visit_Lambda(self, node) -> None:
        arguments = node.args
        for default in [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]:
            self.visit(default)
        names = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                                 *filter(None, [arguments.vararg, arguments.kwarg])]}
        self._own_scope(node, lambda: self.bound.update(names), [node.body])

    def _comprehension(self, node, results) -> None:
        def generators() -> None:
            for generator in node.generators:
                self.visit(generator.iter)
                self.visit(generator.target)
                for condition in generator.ifs:
                    self.visit(condition)
        self._own_scope(node, generators, results)

    def visit_ListComp(self, node) -> None:
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node) -> None:
        self._comprehension(node, [node.key, node.value])

    def visit_Import(self, node) -> None:
        for alias in node.names:
            self.bound.add((alias.asname or alias.name).split(".")[0])

    def visit_ImportFrom(self, node) -> None:
        for alias in node.names:
            self.bound.add(alias.asname or alias.name)

    def visit_ExceptHandler(self, node) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self.bound.add(node.name)
        for statement in node.body:
            self.visit(statement)


def _analyse(source: str, where: str) -> _Cell:
    code = to_python(source)
    try:
        tree = ast.parse(code)
        table = symtable.symtable(code, where, "exec")
    except SyntaxError as exc:
        raise GraderError(f"{where}: not valid Python ({exc.msg}, line {exc.lineno}); "
                          "fix the cell") from None
    binds, scopes = set(), {}
    for symbol in table.get_symbols():
        if symbol.is_assigned() or symbol.is_imported():
            binds.add(symbol.get_name())
    for child in table.get_children():
        binds |= _declared_global_binds(child)
        scopes[child.get_name()] = scopes.get(child.get_name(), set()) | _global_reads(child)
    flow = _Flow(scopes)
    flow.visit(tree)
    names = _Names()
    names.visit(tree)
    defined = {node.name for node in ast.walk(tree)
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    return _Cell(imports=names.imported, reads=flow.external, binds=binds, changes=names.changed,
                 functions={name: reads for name, reads in scopes.items() if name in defined})


def classify(notebook, where: str = "notebook") -> list[CellOutputs]:
    """One :class:`CellOutputs` per cell of solution ``notebook`` (markdown cells: kind ``""``).

    Raises GraderError (naming ``where`` and the cell) for a code cell that is not Python, or for
    ``given-output`` on an exercise cell or a cell with a solution region."""
    learner: dict[str, set[str]] = {name: {kind} for name, kind in LEARNER_SOURCES.items()}
    """Learner-dependent name -> what it depends on (IMPLEMENT and/or ANSWER)."""
    calls: dict[str, set[str]] = {}
    """Function or class name -> the global names its body reads (read again at each call)."""
    modules: set[str] = set()
    """Names that imports bind: a module that a learner cell calls into stays given."""
    decisions = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            decisions.append(CellOutputs(""))
            continue
        cell_where = f"{where}, cell {index}"
        cell_tags = tags(cell)
        analysed = _analyse(cell.source, cell_where)
        reads, seen = set(), list(analysed.reads)
        while seen:  # the names read through the functions the cell calls, transitively
            name = seen.pop()
            if name not in reads:
                reads.add(name)
                seen.extend(calls.get(name, ()))
        depends = {name: learner[name] for name in sorted(reads) if name in learner}
        kinds = set().union(*depends.values()) if depends else set()
        region = any(line.strip() == BEGIN_SOLUTION for line in cell.source.split("\n"))
        if EXERCISE_TAG in cell_tags:
            kind = cell.metadata.get("exercise_kind", IMPLEMENT)
            kinds |= {IMPLEMENT if kind == IMPLEMENT else ANSWER}
            decision = CellOutputs(EXERCISE, "an exercise cell")
        elif region or INSTRUCTOR_TAG in cell_tags:
            kinds |= {ANSWER}
            decision = CellOutputs(LEARNER, "a solution region" if region else "an instructor cell")
        elif LEARNER_TAG in cell_tags:
            kinds |= {ANSWER}
            decision = CellOutputs(LEARNER, f"tagged {LEARNER_TAG}")
        elif ANSWER in kinds:
            decision = CellOutputs(LEARNER, "reads " + ", ".join(n for n, k in depends.items() if ANSWER in k))
        elif kinds:
            decision = CellOutputs(EXPECTED, "reads " + ", ".join(depends))
        else:
            decision = CellOutputs(GIVEN)
        if GIVEN_TAG in cell_tags:
            if EXERCISE_TAG in cell_tags or region:
                raise GraderError(f"{cell_where}: '{GIVEN_TAG}' on an exercise cell or a cell with a "
                                  "solution region; its outputs are the learner's: remove the tag")
            kinds, decision = set(), CellOutputs(GIVEN, f"tagged {GIVEN_TAG}")
        modules |= analysed.imports
        for name in analysed.binds - modules:
            if kinds:
                learner[name] = set(kinds)
            else:
                learner.pop(name, None)
        for name in analysed.changes - modules:
            if kinds:
                learner[name] = learner.get(name, set()) | kinds
        for name in analysed.binds - set(analysed.functions):
            calls.pop(name, None)  # rebound to a value: calling it reads nothing else
        calls.update(analysed.functions)
        decisions.append(decision)
    return decisions
