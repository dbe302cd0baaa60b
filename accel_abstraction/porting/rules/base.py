"""The :class:`Rule` type: one kind of coupling, with everything that belongs to it.

A rule is one object in one file, as a Fixit rule is: its code and message, how it is found
(``apis``: the CUDA APIs it reports, with their replacement and meaning on the cpu backend;
``names``: qualified names; ``matcher``: a callable), how ``accel port`` rewrites it (a typed
:class:`~accel_abstraction.porting.fixes.Fix`), and the examples and counterexamples that
run as tests.  Built-in rules (``rules/accNNN_*.py``) and plugin rules reach the scanner by
the same path, the ``accel_scan_rules(register)`` hook (see :mod:`accel_abstraction.porting.rules`).

How a rule matches:

- ``apis``: rows of the CUDA API table (:mod:`accel_abstraction.porting.apis`): a use of
  the API is reported with this rule's code; ``call`` and ``flag`` rows are rewritten to
  their replacement, ``manual`` and ``package`` rows are reported with their hint.
- ``names``: fully qualified names (after import-alias resolution) that are coupling,
  e.g. ``("cupy", "mylib.gpu.sync")``.  A use of the name, or of anything under it
  (``cupy.asarray``), is reported once, at the outermost expression that resolves.
- ``matcher``: a callable ``matcher(node, ctx)`` called with every :class:`ast.Call` and
  :class:`ast.Attribute` node; it returns ``None`` to pass, a message (``""`` for the
  rule's own) to report the node, or a :class:`Match` to report it with a fix that
  ``accel port`` applies.  ``ctx.qualname(expr)`` resolves an expression such as
  ``tc.synchronize`` to ``"torch.cuda.synchronize"``.
- ``calls`` (built-in rules): qualified callees whose calls the rule's own check examines
  (``torch.device``, ``torch.autocast``, ``init_process_group``).
- ``visits`` (built-in rules): the other shapes the rule's checks look at, by where they stand
  (:data:`VISIT_KINDS`); the scanner's single traversal builds one dispatch table from every
  rule's and hands each shape to the checks declared for it:

  ``"method:NAME"``: ``check(scan, call, qualname) -> bool`` for every call ``x.NAME(...)``;
  true when the check walked the call's parts itself (the traversal does not descend);
  ``"keyword:NAME"``: ``check(scan, call, value, qualname)`` for every argument ``NAME=value``;
  ``"call:QUALNAME"``: ``check(scan, call)`` for every call of that callee, the traversal then
  walking the call as usual; ``"string"``: ``check(scan, constant)`` for every string literal no
  check reported from its parent; ``"default"``: ``check(scan, name, default) -> bool`` for a
  parameter's default (true: reported); ``"dict:KEY"``: ``check(scan, value)`` for the value
  under the key ``"KEY"`` of a dict display; ``"attribute:NAME"``: ``check(scan, attribute)``
  for every ``x.NAME``; ``"reference"``: ``check(scan, node, qualname) -> bool`` for a resolved
  name outside a call (true: reported); ``"flag"``: ``check(scan, target, qualname) -> bool``
  for an assignment to an attribute no API row holds (true: reported).

  Values in device, backend and environment positions (``"cuda:0"``, ``f"cuda:{i}"``, ``0``,
  ``"nccl"``, ``CUDA_VISIBLE_DEVICES``) are recognised by the functions of the rule files of
  their codes, which the positions of :mod:`accel_abstraction.porting.devices` call: every
  code's shapes are in its own file.

The ``precheck`` strings (case-sensitive) of a rule let the scanner skip a file without
parsing it when none of them occurs in its text, and skip statements whose lines contain
none of them (nor a name the rule's ``names`` cover); a plugin rule without ``precheck``
turns both off.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..apis import ApiMapping
from ..fixes import Fix


class MatchContext(Protocol):
    """What a matcher may ask about the file being scanned."""

    path: str

    def qualname(self, node: ast.AST) -> str | None:
        """The fully qualified dotted name ``node`` refers to, or ``None``."""
        ...


@dataclass(frozen=True)
class Match:
    """A matcher's report of one node: an optional detail and how ``accel port`` rewrites the node.

    Attributes:
        detail: appended to the rule's message after a colon (empty: the message alone).
        fix: the rewrite, e.g. ``Replace(text="accel.synchronize()")``; its span is filled in
            from the node; ``None``: reported, not rewritten.
    """

    detail: str = ""
    fix: Fix | None = None


Matcher = Callable[[ast.AST, MatchContext], str | Match | None]
#: ``check(scan, call)``: a built-in rule's look at a call of one of its callees (``Rule.calls``).
CallCheck = Callable[[Any, ast.Call], None]
#: A built-in rule's look at one shape the traversal hands it (``Rule.visits``; arguments by kind).
Visit = Callable[..., Any]
#: The kinds of ``Rule.visits`` keys (``"method:cuda"``, ``"keyword:fused"``, ``"string"``, ...).
VISIT_KINDS = ("method", "keyword", "call", "string", "default", "dict", "attribute", "reference", "flag")

#: Rule categories of the built-in rules (a plugin rule may use a word of its own).
CATEGORIES: tuple[str, ...] = (
    "device-string",
    "tensor",
    "cuda-api",
    "amp",
    "rng",
    "memory",
    "sync-streams",
    "distributed",
    "numerics",
    "data",
    "env",
    "manual",
)

_CODE_RE = re.compile(r"^[A-Z]{2,6}[0-9]{3}$")


@dataclass(frozen=True)
class Rule:
    """One kind of coupling.

    Attributes:
        code: stable identifier, e.g. ``"ACC101"`` (letters then three digits).
        category: one of :data:`CATEGORIES`, or a plugin's own word.
        message: what was found, one line.
        suggestion: the portable rewrite, shown in parentheses after the message.
        portable: whether ``accel port`` can rewrite what this rule finds (the docs say so).
        apis: the CUDA API rows this rule reports (module docstring); their ``code`` is this rule's.
        calls: qualified callee -> check, for built-in rules: the scanner's traversal hands each
            call of that callee to the check (with itself, the per-file state, as ``scan``) and
            then walks the call's arguments.
        visits: shape kind -> check, for built-in rules (module docstring, :data:`VISIT_KINDS`).
        names: qualified names this rule reports.
        matcher: callable reporting nodes, see the module docstring.
        precheck: substrings one of which a file must contain for this rule to fire.
        examples: ``(source, ported)`` pairs the rule must report; ``ported`` is the line
            ``accel port`` makes of the last line of ``source`` (``None``: reported, not
            rewritten).  The first one is shown in the docs table.
        counterexamples: sources the rule must not report (look-alikes).
    """

    code: str
    category: str
    message: str
    suggestion: str | None = None
    portable: bool = False
    apis: tuple[ApiMapping, ...] = field(default=(), compare=False)
    calls: Mapping[str, CallCheck] = field(default_factory=dict, compare=False)
    visits: Mapping[str, Visit] = field(default_factory=dict, compare=False)
    names: tuple[str, ...] = ()
    matcher: Matcher | None = field(default=None, compare=False)
    precheck: tuple[str, ...] = ()
    examples: tuple[tuple[str, str | None], ...] = field(default=(), compare=False)
    counterexamples: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not _CODE_RE.match(self.code):
            raise ValueError(
                f"rule code {self.code!r} must be 2-6 capital letters then 3 digits, e.g. ACC101"
            )
        unknown = [key for key in self.visits if key.partition(":")[0] not in VISIT_KINDS]
        if unknown:
            raise ValueError(f"rule {self.code}: unknown visits {unknown}; the kinds are {', '.join(VISIT_KINDS)}")
        if any(row.code != self.code for row in self.apis):
            # the rows are written in the rule's file without a code: they are reported with this one
            object.__setattr__(
                self, "apis", tuple(dataclasses.replace(row, code=self.code) for row in self.apis)
            )
