import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
EXAMPLES = ROOT / "examples"

SEED000 = {"name": "seed000", "seed": 1, "processes": [{"name": "test", "ops": [
    {"op": "mmap", "name": "buf", "size": "10G"},
    {"op": "madvise", "region": "buf", "advice": "hugepage"},
    {"op": "write", "region": "buf", "every": "2M", "length": "4K", "byte": 0, "bytes": 1, "data": 255},
    {"op": "madvise", "region": "buf", "advice": "pageout"},
    {"op": "munmap", "region": "buf"}]}]}


@pytest.fixture
def seed000_doc():
    return json.loads(json.dumps(SEED000))


@pytest.fixture
def write_workload(tmp_path):
    """write_workload(doc_or_text, name="w.json") -> path"""
    def write(doc, name="w.json"):
        p = tmp_path / name
        if isinstance(doc, bytes):
            p.write_bytes(doc)
        elif isinstance(doc, str):
            p.write_text(doc)
        else:
            p.write_text(json.dumps(doc))
        return p
    return write
