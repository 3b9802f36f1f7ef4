"""Whether a function's random draws are seeded by its own arguments: the same draws for the same
sample, so a cache of its output is exact (the knowledge base's ``cache_preprocessing`` keeps
training the same), though it calls a random number generator.

Synthetic datasets and many real ones make each sample from a generator seeded by its index, so
that a sample is the same in every epoch and on every worker::

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(3, 64, 64, generator=g)

Read from the function's source with ``ast`` (``random_draws.function_draws`` finds the function
and its draws first): every call up to the sampled line that draws random numbers must draw from
a generator built in the function from a seed made of its parameters (``default_rng(i)``,
``RandomState(i)``, ``random.Random(i)``, ``torch.Generator().manual_seed(i)``, or a global
``np.random.seed(i)`` / ``random.seed(i)`` / ``torch.manual_seed(i)`` made earlier in the
function); a seed made only of parameters (not ``self``), constants and arithmetic. Any other draw
(an unseeded generator, one kept on ``self``, a random transform) and it is not shown to be
seeded. The callers of the function are read by the caller (``random_draws.stack_draws``): a
seed drawn at random by them makes the draws random again.
"""

from __future__ import annotations

import ast
import re

#: calls that build a generator from their first argument
SEEDED_CONSTRUCTOR = re.compile(r"(^|\.)(default_rng|RandomState|Random)$")
#: calls that seed a module's global generator from their first argument
GLOBAL_SEEDER = re.compile(r"^(np\.random|numpy\.random|random|torch)\.(seed|manual_seed)$")
#: modules whose functions draw from their global generator
GLOBAL_MODULE = re.compile(r"^(np\.random|numpy\.random|random|torch|torch\.random)$")
#: a generator built without a seed (drawn from the OS): its draws are random
UNSEEDED_GENERATOR = re.compile(r"(^|\.)Generator$")


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = fn.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    return {n for n in names if n not in ("self", "cls")}


def _seed_of_params(node: ast.expr | None, params: set[str]) -> bool:
    """``node`` is made of the function's parameters (one at least), constants and arithmetic."""
    if node is None:
        return False
    names: list[str] = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            names.append(n.id)
        elif not isinstance(n, (ast.BinOp, ast.UnaryOp, ast.Constant, ast.Tuple, ast.Load, ast.operator, ast.unaryop)):
            return False
    return bool(names) and all(n in params for n in names)


def _first_arg(call: ast.Call) -> ast.expr | None:
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg in ("seed", "x", "a")), None)


def _seeded_call(node: ast.expr, params: set[str]) -> bool:
    """``node`` builds a generator seeded by the parameters: ``default_rng(i)``, ``RandomState(i)``,
    ``random.Random(i)``, ``torch.Generator().manual_seed(i)``."""
    if not isinstance(node, ast.Call):
        return False
    name = ast.unparse(node.func)
    if SEEDED_CONSTRUCTOR.search(name):
        return _seed_of_params(_first_arg(node), params)
    f = node.func
    if isinstance(f, ast.Attribute) and f.attr == "manual_seed" and isinstance(f.value, ast.Call):
        return bool(UNSEEDED_GENERATOR.search(ast.unparse(f.value.func))) and _seed_of_params(_first_arg(node), params)
    return False


def _own_nodes(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """The function's nodes, without those of the functions and classes defined in it."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(fn.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        out.append(n)
        todo.extend(ast.iter_child_nodes(n))
    return out


def seeded_by_arguments(source: str, line: int, draws: re.Pattern[str]) -> bool:
    """The function whose source is ``source`` (its ``def`` first; ``line`` counted in it from 1)
    draws, up to ``line``, only from generators seeded by its parameters: a call is a draw when
    ``draws`` finds one in its callee (``random_draws.RANDOM_CALL``). False when it cannot be
    parsed or shown so."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    fn = tree.body[0] if tree.body else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    params = _params(fn)
    if not params:
        return False
    nodes = _own_nodes(fn)
    seeded: dict[str, int] = {}  # generator names bound to a seeded generator -> the line they were bound
    plain: set[str] = set()  # names bound to torch.Generator() (seeded by a later .manual_seed(i))
    global_seeded: dict[str, int] = {}  # module -> the line its global generator was seeded
    rebound: set[str] = set()  # names also bound to something else: their draws are not shown seeded
    for n in sorted(nodes, key=lambda x: getattr(x, "lineno", 0)):
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With, ast.NamedExpr)):
            targets = n.targets if isinstance(n, ast.Assign) else [getattr(n, "target", None)]
            if isinstance(n, ast.With):
                targets = [w.optional_vars for w in n.items]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            value = getattr(n, "value", None)
            one = isinstance(n, ast.Assign) and len(names) == 1 and len(n.targets) == 1
            if one and value is not None and _seeded_call(value, params):
                seeded[names[0]] = n.lineno
            elif one and isinstance(value, ast.Call) and UNSEEDED_GENERATOR.search(ast.unparse(value.func)):
                plain.add(names[0])
            else:
                rebound.update(names)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            owner, attr = ast.unparse(n.func.value), n.func.attr
            if attr == "manual_seed" and owner in plain and _seed_of_params(_first_arg(n), params):
                seeded[owner] = n.lineno
            elif GLOBAL_SEEDER.match(f"{owner}.{attr}") and _seed_of_params(_first_arg(n), params):
                global_seeded[owner.split(".")[0]] = n.lineno
    seen = False  # a call ``draws`` finds: a draw, or building or seeding a generator
    for n in nodes:
        if not isinstance(n, ast.Call) or n.lineno > line or not draws.search(_callee(n.func) + "("):
            continue
        seen = True
        if _seeded_call(n, params) or _is_seeding(n, params):
            continue  # building or seeding a generator from the parameters draws nothing yet
        if not _from_seeded(n, params, {k: v for k, v in seeded.items() if k not in rebound}, global_seeded):
            return False
    return seen


def _callee(f: ast.expr) -> str:
    """The called name as text, a call it is made on shown as ``_()``: in
    ``rng.standard_normal(n).astype(...)`` the draw is the inner call (read on its own), not the
    ``astype``."""
    if isinstance(f, ast.Attribute):
        return f"{'_()' if isinstance(f.value, ast.Call) else ast.unparse(f.value)}.{f.attr}"
    return ast.unparse(f)


def _is_seeding(call: ast.Call, params: set[str]) -> bool:
    f = call.func
    return (
        isinstance(f, ast.Attribute) and f.attr in ("seed", "manual_seed") and _seed_of_params(_first_arg(call), params)
    )


def _from_seeded(call: ast.Call, params: set[str], seeded: dict[str, int], global_seeded: dict[str, int]) -> bool:
    """A draw from a seeded generator: a method of one (``rng.normal(...)``, ``default_rng(i).x(...)``),
    a torch function given one (``generator=g``), or a module's global function after that module
    was seeded in the function."""
    gen = next((k.value for k in call.keywords if k.arg == "generator"), None)
    if gen is not None:
        return isinstance(gen, ast.Name) and gen.id in seeded and seeded[gen.id] <= call.lineno
    f = call.func
    if not isinstance(f, ast.Attribute):
        return False
    owner = f.value
    if isinstance(owner, ast.Name) and owner.id in seeded:
        return seeded[owner.id] <= call.lineno
    if isinstance(owner, ast.Call):
        return _seeded_call(owner, params)  # default_rng(i).standard_normal(...)
    module = ast.unparse(owner)
    if GLOBAL_MODULE.match(module):
        root = module.split(".")[0]  # np, numpy, random, torch: as its seeding is keyed
        return root in global_seeded and global_seeded[root] <= call.lineno
    return False
