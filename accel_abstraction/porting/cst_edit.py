"""libcst building blocks the typed fixes (:mod:`.fixes`, the rules' own) rewrite nodes with.

Imported only when a fix is applied (``accel port``), never by ``accel scan``: libcst comes
with the ``port`` extra.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..requirements import missing

try:
    import libcst as cst
except ModuleNotFoundError as _exc:
    raise missing(_exc, "libcst", "accel port (lossless rewriting)") from None

from .apis import ACCELERATOR_TEST

__all__ = [
    "ACCELERATOR_TEST",
    "Unapplied",
    "call",
    "cst",
    "drop_arg",
    "expr",
    "guard_enabled",
    "guard_value",
    "keep_parens",
]


class Unapplied(Exception):
    """A fix whose node did not have the expected shape; the site is left as it was."""


def expr(text: str) -> cst.BaseExpression:
    """``text`` parsed as an expression."""
    return cst.parse_expression(text)


def call(func: str, *values: cst.BaseExpression) -> cst.Call:
    """``func(v1, v2, ...)``."""
    args = [cst.Arg(v, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for v in values[:-1]]
    args += [cst.Arg(v) for v in values[-1:]]
    return cst.Call(func=expr(func), args=args)


def keep_parens(old: cst.BaseExpression, new: cst.BaseExpression) -> cst.BaseExpression:
    """``new`` inside the parentheses ``old`` had."""
    if old.lpar and hasattr(new, "lpar"):
        return new.with_changes(lpar=[*old.lpar, *new.lpar], rpar=[*new.rpar, *old.rpar])
    return new


def _without_trailing_comma(args: list[cst.Arg]) -> list[cst.Arg]:
    if args and isinstance(args[-1].comma, cst.Comma):
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return args


def drop_arg(args: Sequence[cst.Arg], drop: int | str | None) -> list[cst.Arg]:
    """``args`` without the positional argument at index ``drop`` (an ``int``) or the keyword ``drop``."""
    kept = list(args)
    if drop is None:
        return kept
    if isinstance(drop, int):
        positional = [i for i, a in enumerate(kept) if a.keyword is None and not a.star]
        if drop >= len(positional):
            raise Unapplied
        index = positional[drop]
    else:
        index = next((i for i, a in enumerate(kept) if a.keyword is not None and a.keyword.value == drop), -1)
        if index < 0:
            raise Unapplied
    was_last = index == len(kept) - 1
    del kept[index]
    return _without_trailing_comma(kept) if was_last else kept


_SIMPLE = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString, cst.Integer)
_TIGHT_EQUAL = {"whitespace_before": cst.SimpleWhitespace(""), "whitespace_after": cst.SimpleWhitespace("")}


def guard_value(new: cst.BaseExpression, otherwise: str, paren: bool) -> cst.BaseExpression:
    """``new`` -> ``(new if accel.is_accelerator_available() else otherwise)``."""
    guarded = cst.IfExp(test=expr(ACCELERATOR_TEST), body=new, orelse=expr(otherwise))
    if paren:
        guarded = guarded.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return guarded


def guard_enabled(node: cst.BaseExpression) -> cst.BaseExpression:
    """A call gets ``enabled=... and accel.is_accelerator_available()`` (disabled on the cpu backend)."""
    if not isinstance(node, cst.Call):
        raise Unapplied
    args = list(node.args)
    test = expr(ACCELERATOR_TEST)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == "enabled":
            value = arg.value
            if not isinstance(value, _SIMPLE) or value.lpar:
                value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            both = cst.BooleanOperation(left=value, operator=cst.And(), right=test)
            args[i] = arg.with_changes(value=both)
            return node.with_changes(args=args)
    if any(a.star == "**" for a in args):
        raise Unapplied  # enabled may come in **kwargs
    if args and not isinstance(args[-1].comma, cst.Comma):
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    args.append(cst.Arg(test, keyword=cst.Name("enabled"), equal=cst.AssignEqual(**_TIGHT_EQUAL)))
    return node.with_changes(args=args)


def keyword(arg: cst.Arg, name: str) -> cst.Arg:
    """``arg`` passed as ``name=...`` (no spaces around ``=``)."""
    return arg.with_changes(keyword=cst.Name(name), equal=cst.AssignEqual(**_TIGHT_EQUAL))
