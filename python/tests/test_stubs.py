"""The type stubs (taskledger/__init__.pyi) and the module agree: every
public name the stubs declare exists at run time and every public run-time
name is declared, as are the methods of each class."""

import ast
import pathlib

import taskledger

STUB = pathlib.Path(taskledger.__file__).with_name("__init__.pyi")


def stub_tree():
    return ast.parse(STUB.read_text(encoding="utf-8"))


def declared():
    names, methods = set(), {}
    for node in stub_tree().body:
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
            methods[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets)
    return names, methods


def test_stubs_match_the_module():
    assert (pathlib.Path(taskledger.__file__).with_name("py.typed")).is_file()
    names, methods = declared()
    helpers = {"JSON", "Format", "Tool", "Result", "ServiceUrl", "_Vendor", "_Mcp"}
    runtime = {n for n in dir(taskledger) if not n.startswith("_")} - {"aio"}
    runtime -= {n for n in runtime if type(getattr(taskledger, n)).__name__ == "module"
                and n not in ("openai_chat", "openai_responses", "anthropic", "mcp")}
    assert sorted(runtime ^ (names - helpers - {"__version__"})) == []
    for cls, ms in methods.items():
        if cls.startswith("_") or cls in helpers:
            continue
        obj = getattr(taskledger, cls)
        for m in ms - {"__init__"}:
            assert hasattr(obj, m), f"{cls}.{m} is in the stubs but not in the module"
        public = {n for n in dir(obj) if not n.startswith("_")}
        if isinstance(obj, type) and not issubclass(obj, BaseException):
            assert public <= ms, f"{cls}: {sorted(public - ms)} missing from the stubs"
    for vendor in ("openai_chat", "openai_responses", "anthropic"):
        mod = getattr(taskledger, vendor)
        assert {n for n in dir(mod) if not n.startswith("_")} == methods["_Vendor"]
    assert {n for n in dir(taskledger.mcp) if not n.startswith("_")} == methods["_Mcp"]
