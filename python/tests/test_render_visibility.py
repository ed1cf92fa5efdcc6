"""A pack's pack.json "render" section (internal, redact; docs/render.md)
applies to what Python renders: Session.render in process, State.render and
taskledger.render given the pack, and a service session opened with the pack.
The values stay in the ledger for rules and audit."""

import json
import shutil

import pytest

import taskledger
from conftest import ROOT
from test_service import tools

RENDER = {"internal": ["grace_period_days"], "redact": {"claimed": [""]}}


def pack_dir(tmp_path, render):
    d = tmp_path / "subscription"
    shutil.copytree(ROOT / "rules" / "subscription", d)
    manifest = json.loads((d / "pack.json").read_text())
    manifest["render"] = render
    (d / "pack.json").write_text(json.dumps(manifest))
    return d


def converse(session):
    session.record_user_message("Cancel it please, my email is ann@example.com")
    session.handle_tool_call("c1", "get_subscription", {"user_id": "u1"}, tools("grace_period"))
    session.end_turn()


def assert_kept_out(block):
    block = block.replace("`", "")  # markdown quotes keys
    assert "subscription_status: grace_period" in block  # not marked: renders
    assert "grace_period_days" not in block              # internal: never rendered
    assert "ann@example.com" not in block                # redacted
    assert 'claimed.email: "[redacted]"' in block


def test_in_process_render_applies_the_pack(tmp_path):
    pack = taskledger.RulePack.load(str(pack_dir(tmp_path, RENDER)))
    s = taskledger.Session.open(taskledger.MemoryStore(), conversation="v", pack=pack)
    converse(s)
    for fmt in ("plain", "markdown"):
        assert_kept_out(s.render(format=fmt))
    assert_kept_out(s.ledger.head.render(pack=pack))
    assert_kept_out(taskledger.render(s.ledger.head, pack=pack))
    assert "grace_period_days" not in s.render(format="json")
    # The ledger (what rules and the audit read) keeps every value.
    head = s.ledger.head
    assert head.constraints == {"grace_period_days": 5}
    assert head.identifiers == {"claimed.email": "ann@example.com"}
    # Without a pack, State.render shows everything (a caller's choice).
    assert "ann@example.com" in head.render()


def test_service_session_with_the_pack_renders_with_it(tmp_path, serve):
    d = pack_dir(tmp_path, RENDER)
    service = serve("--rules", str(d))
    s = taskledger.Session.open(service.url, conversation="v",
                                pack=taskledger.RulePack.load(str(d)))
    converse(s)
    assert_kept_out(s.render())
    assert_kept_out(s.render(format="markdown"))


def test_a_malformed_render_section_is_an_error(tmp_path):
    bad = pack_dir(tmp_path, {"internal": "grace_period_days"})
    with pytest.raises(taskledger.InvalidArgument, match="internal"):
        pack = taskledger.RulePack.load(str(bad))
        s = taskledger.Session.open(taskledger.MemoryStore(), conversation="v", pack=pack)
        s.render()
