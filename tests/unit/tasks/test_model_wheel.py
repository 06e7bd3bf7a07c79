"""The wheel logged with every model holds the dpsyn library only, pinned to its runtime, with a valid RECORD."""

from __future__ import annotations

import base64
import hashlib
import zipfile

from tasks.model_wheel import RUNTIME, build_wheel


def test_the_wheel_holds_dpsyn_only_and_is_reproducible(tmp_path):
    a = build_wheel(tmp_path)
    (tmp_path / "again").mkdir()
    b = build_wheel(tmp_path / "again")
    assert a.name == b.name and a.read_bytes() == b.read_bytes()  # same code, same bytes, same cached env
    assert a.name.startswith("dpsyn-") and a.name.endswith("-py3-none-any.whl") and "+" in a.name
    with zipfile.ZipFile(a) as z:
        names = z.namelist()
        tops = {n.split("/")[0] for n in names}
        info = next(t for t in tops if t.endswith(".dist-info"))
        assert tops == {"dpsyn", info}  # no tasks, flows or CLI package to collide with another project's
        assert "dpsyn/synth/pgm.py" in names and "dpsyn/schemas/adult.yaml" in names
        assert not any(n.startswith("dpsyn/data/") or "__pycache__" in n for n in names)
        meta = z.read(f"{info}/METADATA").decode()
        requires = [line.split(": ", 1)[1] for line in meta.splitlines() if line.startswith("Requires-Dist: ")]
        assert [r.split("==")[0] for r in requires] == list(RUNTIME) and all("==" in r for r in requires)
        record = z.read(f"{info}/RECORD").decode().splitlines()
        assert len(record) == len(names)
        for line in record:
            name, digest, size = line.rsplit(",", 2)
            if name == f"{info}/RECORD":
                continue
            data = z.read(name)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == f"sha256={want}" and int(size) == len(data)


def test_the_model_code_and_the_adapter_name_the_same_artifacts():
    """tasks/synthesizer_model.py (the logged model's code) cannot import tasks.pyfunc_model, so both spell the
    artifact keys and the digest key: they must agree, read without running the code file."""
    import ast

    from tasks import pyfunc_model

    tree = ast.parse(pyfunc_model.MODEL_CODE.read_text())
    consts = {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
              for t in node.targets if isinstance(t, ast.Name) and isinstance(node.value, ast.Constant)}
    for name in ("ARTIFACT_KEY", "WHEEL_KEY", "DIGEST_KEY"):
        assert consts[name] == getattr(pyfunc_model, name), name
