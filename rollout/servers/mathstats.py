"""MCP server: arithmetic and descriptive statistics.

``evaluate`` computes an arithmetic expression (numbers, + - * / // % **, parentheses and the
functions and constants listed in its description) without executing code; the other tools take
lists of numbers.
"""

from __future__ import annotations

import ast
import math
import operator
import statistics
from collections.abc import Callable

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("math", instructions="Arithmetic and statistics on lists of numbers.", log_level="WARNING")

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "sqrt": math.sqrt, "log": math.log, "log10": math.log10, "log2": math.log2, "exp": math.exp,
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
    "atan": math.atan, "abs": abs, "round": round, "floor": math.floor, "ceil": math.ceil,
    "min": min, "max": max, "factorial": math.factorial}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}
_MAX_POWER = 10_000


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_POWER:
            raise ToolError(f"exponent {right} is too large")
        return _BINARY[type(node.op)](left, right)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS
            and not node.keywords):
        return _FUNCTIONS[node.func.id](*(_eval(a) for a in node.args))
    raise ToolError(f"unsupported expression element: {ast.dump(node)[:60]}")


@server.tool()
def evaluate(expression: str) -> dict[str, object]:
    """Evaluate an arithmetic expression: numbers, + - * / // % **, parentheses, pi, e, tau and
    sqrt, log, log10, log2, exp, sin, cos, tan, asin, acos, atan, abs, round, floor, ceil, min, max,
    factorial."""
    if len(expression) > 1000:
        raise ToolError("the expression is longer than 1000 characters")
    try:
        value = _eval(ast.parse(expression.strip(), mode="eval"))
    except SyntaxError:
        raise ToolError(f"not an arithmetic expression: {expression!r}") from None
    except (ZeroDivisionError, ValueError, OverflowError, TypeError) as exc:
        raise ToolError(f"cannot evaluate {expression!r}: {exc}") from None
    return {"expression": expression, "result": value}


def _need(numbers: list[float], at_least: int = 1) -> list[float]:
    if len(numbers) < at_least:
        raise ToolError(f"need at least {at_least} number{'s' if at_least > 1 else ''}")
    return numbers


@server.tool()
def mean(numbers: list[float]) -> dict[str, object]:
    """Arithmetic mean of a list of numbers."""
    return {"mean": statistics.fmean(_need(numbers)), "count": len(numbers)}


@server.tool()
def median(numbers: list[float]) -> dict[str, object]:
    """Median of a list of numbers (the mean of the two middle values for an even count)."""
    return {"median": statistics.median(_need(numbers)), "count": len(numbers)}


@server.tool()
def mode(numbers: list[float]) -> dict[str, object]:
    """Most frequent value(s) of a list of numbers, with their frequency."""
    modes = statistics.multimode(_need(numbers))
    return {"modes": sorted(modes), "frequency": numbers.count(modes[0]), "count": len(numbers)}


@server.tool()
def stdev(numbers: list[float], population: bool = False) -> dict[str, object]:
    """Standard deviation of a list of numbers (sample by default, population if asked)."""
    value = statistics.pstdev(_need(numbers)) if population else statistics.stdev(_need(numbers, 2))
    return {"stdev": value, "population": population, "count": len(numbers)}


@server.tool()
def variance(numbers: list[float], population: bool = False) -> dict[str, object]:
    """Variance of a list of numbers (sample by default, population if asked)."""
    value = statistics.pvariance(_need(numbers)) if population else statistics.variance(_need(numbers, 2))
    return {"variance": value, "population": population, "count": len(numbers)}


def _percentile(ordered: list[float], q: float) -> float:
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@server.tool()
def percentile(numbers: list[float], q: float) -> dict[str, object]:
    """The q-th percentile (0-100) of a list of numbers, linearly interpolated."""
    if not 0 <= q <= 100:
        raise ToolError("q must be between 0 and 100")
    return {"percentile": _percentile(sorted(_need(numbers)), q), "q": q, "count": len(numbers)}


@server.tool()
def describe(numbers: list[float]) -> dict[str, object]:
    """Count, sum, mean, median, sample standard deviation, min, quartiles and max of a list of numbers."""
    ordered = sorted(_need(numbers))
    return {"count": len(ordered), "sum": math.fsum(ordered), "mean": statistics.fmean(ordered),
            "median": statistics.median(ordered),
            "stdev": statistics.stdev(ordered) if len(ordered) > 1 else 0.0,
            "min": ordered[0], "q1": _percentile(ordered, 25), "q3": _percentile(ordered, 75), "max": ordered[-1]}


def _pairs(x: list[float], y: list[float]) -> None:
    if len(x) != len(y):
        raise ToolError(f"x and y differ in length ({len(x)} and {len(y)})")
    _need(x, 2)


@server.tool()
def correlation(x: list[float], y: list[float]) -> dict[str, object]:
    """Pearson correlation coefficient of two equally long lists of numbers."""
    _pairs(x, y)
    try:
        return {"correlation": statistics.correlation(x, y), "count": len(x)}
    except statistics.StatisticsError as exc:
        raise ToolError(str(exc)) from None


@server.tool()
def linear_regression(x: list[float], y: list[float]) -> dict[str, object]:
    """Least-squares line y = slope * x + intercept of two equally long lists, with R squared."""
    _pairs(x, y)
    try:
        fit = statistics.linear_regression(x, y)
        r = statistics.correlation(x, y)
    except statistics.StatisticsError as exc:
        raise ToolError(str(exc)) from None
    return {"slope": fit.slope, "intercept": fit.intercept, "r_squared": r * r, "count": len(x)}


if __name__ == "__main__":
    server.run()
