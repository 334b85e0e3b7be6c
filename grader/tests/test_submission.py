"""grader.submission: lab-01's starter files found wherever students put them (flat, nested, in
a zip of a folder or a zip of a zip, beside Finder's leftovers), what is missing and what is stray
named, and the zips that would write outside their folder or fill the disk refused."""

import os
import zipfile
from pathlib import Path

import pytest

from common import py_files
from common.course import course_step, step_names
from grader.engine import hidden
from grader.submission import FILE_LIMIT, LIMIT, UNPACKED, SubmissionError, match

LAB_02 = course_step("lab-02").solution

STARTER = course_step("lab-01").starter
# The starter's files, as the grade asks for them: ["attention.py", "exercises/wrong_mask.py"]
WANTED = sorted(
    p.relative_to(course_step("lab-01").solution).as_posix()
    for p in py_files(course_step("lab-01").solution)
)
A, W = WANTED  # attention.py, exercises/wrong_mask.py
MAC = b"\x00\x05\x16\x07"  # a resource fork's first bytes


def files(layout: dict[str, str]) -> dict[str, bytes]:
    """Submitted path -> bytes: each wanted starter file (the value) placed at its path (the key)."""
    return {path: (STARTER / wanted).read_bytes() for path, wanted in layout.items()}


def folder(dest: Path, content: dict[str, bytes]) -> Path:
    """A folder holding `content` (path -> bytes)."""
    for name, data in content.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(data)
    return dest


def zipped(dest: Path, content: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> Path:
    """A zip holding `content` (path in the zip -> bytes), compressed with `method`."""
    with zipfile.ZipFile(dest, "w", method) as z:
        for name, data in content.items():
            z.writestr(name, data)
    return dest


def assert_whole(m) -> None:
    """Every starter file found, each the starter's own bytes, nothing missing."""
    assert sorted(m.files) == WANTED and m.missing == [], m
    for wanted, path in m.files.items():
        assert path.read_bytes() == (STARTER / wanted).read_bytes(), (wanted, path)


def test_the_wanted_files_are_lab_01s_starter_files():
    assert WANTED == ["attention.py", "exercises/wrong_mask.py"]


CLONE = "llm-internals/steps/lab-01"
TAKEN = "(not used: {} was taken for {})"
LAYOUTS = {  # name -> (files as uploaded, zipped?, the stray files named)
    "flat, as Gradescope's drag-and-drop": (files({A: A, "wrong_mask.py": W}), False, []),
    "nested, a repository zipped from its top": (
        files({f"{CLONE}/starter/{w}": w for w in WANTED}), False, [],
    ),
    "a zip from macOS's Compress": (
        files({f"starter/{w}": w for w in WANTED}) | {
            f"__MACOSX/starter/._{A}": MAC, "__MACOSX/starter/exercises/._wrong_mask.py": MAC,
            "starter/.DS_Store": b"\x00\x00\x00\x01Bud1", "starter/__pycache__/a.pyc": b"\x00",
        }, True, [],
    ),
    "a zip holding a zip": (
        {"starter.zip": None, "notes.txt": b"hi"}, True, ["notes.txt"],
    ),
    "a second copy: the one whose path ends with the starter's wins": (
        files({W: W, "wrong_mask.py": W, A: A, f"old/{A}": A}) | {"notes.txt": b"my notes"}, False,
        ["notes.txt", f"old/{A} {TAKEN.format(A, A)}", f"wrong_mask.py {TAKEN.format(W, W)}"],
    ),
    "a whole clone: its starter, not its solution": (
        files({f"{CLONE}/starter/{w}": w for w in WANTED}) | {
            f"{CLONE}/solution/{A}": b"# the reference\n",
            f"llm-internals/.venv/lib/{A}": b"# not the student's\n",
        }, False, [f"{CLONE}/solution/{A} {TAKEN.format(f'{CLONE}/starter/{A}', A)}"],
    ),
}  # fmt: skip


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_an_upload_is_matched_by_name_wherever_its_files_sit(tmp_path, layout):
    content, as_zip, stray = LAYOUTS[layout]
    if "starter.zip" in content:  # the student zipped the zip they made
        inner = zipped(tmp_path / "inner.zip", files({f"starter/{w}": w for w in WANTED}))
        content = content | {"starter.zip": inner.read_bytes()}
    sub = zipped(tmp_path / "sub.zip", content) if as_zip else folder(tmp_path / "sub", content)
    m = match(sub, tmp_path / "scratch", WANTED)
    assert_whole(m)
    assert m.stray == stray, m
    if layout.startswith("a second copy"):
        assert m.files == {w: sub / w for w in WANTED}, m


def test_a_missing_file_is_named_and_a_link_is_not_followed(tmp_path):
    """A link to a file outside the submission (here another starter's) is named, never read."""
    sub = folder(tmp_path / "sub", files({A: A}))
    (sub / "wrong_mask.py").symlink_to(STARTER / W)
    m = match(sub, tmp_path / "scratch", WANTED)
    assert m.missing == [W] and m.files == {A: sub / A}, m
    assert m.stray == ["wrong_mask.py (a link, not followed)"], m


@pytest.mark.parametrize("name", ["../attention.py", "/tmp/attention.py", "a/../../attention.py"])
def test_a_zip_path_that_escapes_is_refused(tmp_path, name):
    sub = zipped(tmp_path / "sub.zip", files({name: A}))
    with pytest.raises(SubmissionError, match="holds a path outside it"):
        match(sub, tmp_path / "scratch", WANTED)
    assert not (tmp_path / "attention.py").exists()


def test_a_zip_bomb_and_oversized_files_are_refused(tmp_path):
    """Zeros compress to almost nothing: the unpacked size is what counts, in every zip."""
    bomb = zipped(tmp_path / "bomb.zip", {A: bytes(UNPACKED + 1)})
    assert bomb.stat().st_size < 100_000
    with pytest.raises(SubmissionError, match=f"unpacks to more than {UNPACKED} bytes"):
        match(bomb, tmp_path / "scratch-1", WANTED)
    inner = zipped(tmp_path / "sub.zip", {"starter.zip": bomb.read_bytes()})
    with pytest.raises(SubmissionError, match=f"unpacks to more than {UNPACKED} bytes"):
        match(inner, tmp_path / "scratch-2", WANTED)
    big = folder(tmp_path / "big", {A: b"#" * (LIMIT + 1)})
    with pytest.raises(SubmissionError, match=f"larger than {LIMIT} bytes"):
        match(big, tmp_path / "scratch-3", WANTED)
    one = folder(tmp_path / "one", {A: b"#" * (FILE_LIMIT + 1000)})  # the whole under LIMIT
    over = f"over the grader's limit of {FILE_LIMIT // 1000} kB"
    with pytest.raises(SubmissionError, match=over):
        match(one, tmp_path / "scratch-4", WANTED)


def test_an_unusable_submission_is_one_line(tmp_path):
    (tmp_path / "notes.zip").write_bytes(b"not a zip")
    with pytest.raises(SubmissionError, match="neither a folder nor a zip file"):
        match(tmp_path / "notes.zip", tmp_path / "scratch", WANTED)
    empty = folder(tmp_path / "empty", {"README.txt": b"hello"})
    with pytest.raises(SubmissionError, match=r"none of the starter's files .*: README.txt$"):
        match(empty, tmp_path / "scratch", WANTED)


def test_a_zip_inside_the_submission_that_cannot_be_unpacked_is_named_not_fatal(tmp_path):
    sub = folder(tmp_path / "sub", files({w: w for w in WANTED}) | {"old.zip": b"PK\x03\x04 no"})
    m = match(sub, tmp_path / "scratch", WANTED)
    assert_whole(m)
    assert m.stray == ["old.zip"], m  # not a zip after all: a stray file, named
    old = zipped(tmp_path / "old.zip", {A: b"print('old')\n"}, zipfile.ZIP_STORED)
    data = bytearray(old.read_bytes())
    data[data.index(b"print")] ^= 0xFF  # a damaged file inside an intact zip: its CRC fails
    (sub / "old.zip").write_bytes(bytes(data))
    m = match(sub, tmp_path / "scratch-2", WANTED)
    assert_whole(m)
    assert m.stray == ["old.zip (cannot be unpacked: Bad CRC-32 for file 'attention.py')"], m


FORGERS_NEED = {  # a line of what only a forger needs -> the words its 'to read' line says
    "_p = torch.serialization.pickle": "reaches .pickle",  # red team 23: unlocked by a field
    "import base64, zlib": "reaches base64",
    "exec(zlib.decompress(base64.b64decode(b'')))": "reaches exec()",
    "import ctypes": "reaches ctypes",
    "from _pytest import python": "reaches _pytest",
    "os.write(3, b'passed')": "reaches os.write",
    "double.__code__ = halve.__code__": "reaches __code__",
    "sys.meta_path.insert(0, object())": "reaches meta_path",
    "run = sys.modules['_pytest.runner']": "reaches modules",
    "object.__setattr__(run, 'x', 1)": "reaches __setattr__",
    "space = run.__dict__": "reaches __dict__",
    "reach = getattr": "reaches getattr, taken as a value",
    "calls = [vars, globals]": "reaches vars, taken as a value",
    "(lambda: torch)().as_tensor = None": "reaches a lambda called where it is made",
    "from unittest import mock": "reaches unittest",
    "modules = vars(sys)['modules']": "reaches vars()",
    # red team 6: exec reached through the builtins' namespace from a string of hex, the record
    # written through open() and an alias of os, the plugin's closure swapped, frames walked
    "_b = __builtins__": "reaches __builtins__",
    "_run = _b['exec']": "reaches the name 'exec', as a string",
    "_run = builtins.exec": "reaches exec, reached as an attribute",
    "_code = bytes.fromhex('70617373').decode()": "reaches fromhex",
    "open(3, 'wb', buffering=0, closefd=False).write(b'[')": "reaches open() of a descriptor",
    "_os.listdir('.')": "reaches listdir",
    "torch.os.write(3, b'')": "reaches os.write",
    "cell.cell_contents = print": "reaches cell_contents",
    "frame = inspect_frame(sys, '_getframe')": "reaches the name '_getframe', as a string",
    # red team 7: what no listed word spells; a TODO's lines use the references' words and torch's
    "import pkgutil": "reaches pkgutil, which no course code uses",
    "write = pkgutil.resolve_name('os:write')": "reaches .resolve_name, which no course code uses",
    "get = _operator.attrgetter('tb' + '_frame')": "reaches the name 'tb_frame', put together",
    "os.execl('/bin/true', 'true')": "reaches .execl, which no course code uses",
    "open(len('abc'), 'wb')": "reaches open, which no course code uses",
    "case object(f_back=back): pass": "reaches .f_back, which no course code uses",
    # red team 8: a name imported from a torch module, attributes and builtins made "the file's
    # own" by a parameter's name, a pickle in bytes for torch.load
    "from torch.serialization import os as _o": "reaches os, which no course code uses",
    "def _opts(execlp=None, open=None): return open(len('abc')) or _o.execlp": "reaches .execlp",
    "def _opener(open=None): return open(len('abc'))": "reaches open, which no course code uses",
    "_ckpt = b'cbuiltins'": "reaches a bytes literal",
    "torch.load(_ckpt, weights_only=False)": "reaches .load, which no course code uses",
    # red team 9: a chain whose first line is one the starter ships, alone on its line
    ".__class__.__mro__[1].__getattribute__)": "reaches __getattribute__",
    # red team 10: a tensor whose own ops answer every comparison; a hook on the test's module
    "class Rows(torch.Tensor): pass": "reaches a subclass of torch.Tensor",
    "def __torch_dispatch__(cls, func, types, args=(), kwargs=None): pass": "a method __torch_d",
    "made = x.as_subclass(Rows)": "reaches as_subclass",
    "x.register_forward_hook(print, always_call=True)": "reaches .register_forward_hook",
    # red team 11: a class body's dunder by assignment, a test's module or tensor given a method
    # of its own, a course module's torch swapped through a loop's name
    "class Liar: __ne__ = lambda self, other: False": "reaches a method __ne__",
    "attn.forward = lambda x: x": "reaches a method .forward set on an object",
    "pe.double = lambda: pe": "reaches a method .double set on an object",
    "for _m in [common.seeding]: _m.torch = None": "changes _m.torch",
    "_spare.load = None": "reaches .load",  # an attribute stored on an object makes no name its own
    "torch.load(b'', weights_only=False)": "reaches .load, which no course code uses",
    # red team 12: a torch mode answering torch's ops, a class swapped on the test's module, a
    # file read as a tensor's bytes, an earlier step's class replaced in its module
    "class Mode(torch.overrides.TorchFunctionMode): pass": "reaches TorchFunctionMode",
    "Mode.__torch_function__ = print": "reaches a method .__torch_function__ set",
    "block.attn.__class__ = Mode": "reaches a method .__class__ set",
    "torch.from_file('steps/lab-02/bugs.py', size=1)": "reaches from_file",
    "_gpt.GPT = Mode": "changes _gpt.GPT",
    # red team 13: torch's own kernel replaced, its names made "the file's own" by a class's
    "torch.library.Library('aten', 'IMPL').impl('any', print, 'CPU')": "reaches impl",
}


def test_what_only_a_forger_needs_is_shown_to_read_and_no_reference_line_is():
    """The red team's forgers ran code from a base64 string, wrote the record's pipe, swapped a
    hook's code and rewrote tests as they imported: each such line is shown, with its place."""
    for step in step_names():  # honest code, every step's reference: nothing to read
        ref = {
            p.name: p.read_text(encoding="utf-8") for p in course_step(step).solution.glob("*.py")
        }
        assert hidden(step, ref, set(ref)) == [], step
    reference = {p.name: p.read_text(encoding="utf-8") for p in LAB_02.glob("*.py")}
    lines = "import os\nimport os as _os\nimport sys\nimport common.seeding\n"
    lines += "from common.loader import reference\n_gpt = reference('step-05', 'gpt')\n"
    lines += "class Kept:\n    def library(self): pass\n"  # no method makes .library the file's
    lines += "    def __init__(self):\n        self.pickle = None\n"  # nor a field x.pickle
    lines += "\n".join(FORGERS_NEED) + "\n"
    lines = lines.replace("case object", "match sys:\n    case object")  # a match's own line
    lines = lines.replace(
        ".__class__.__mro__", "_ga = (\n    check_dropout(x, p, generator)\n    .__class__.__mro__"
    )
    files = reference | {"layers.py": reference["layers.py"] + lines}
    said = hidden("lab-02", files, {"layers.py"})
    for line, words in FORGERS_NEED.items():
        assert any(words in s and line in s for s in said), f"{line}: {said}"


def test_a_layers_own_weights_read_by_name_are_not_listed_to_read():
    """Red team 22: `.weight`, an nn layer's own attribute, not its class's, was no word of the
    course's: a position table read as pos_emb.weight[P : P + t] (honest) was listed."""
    reference = {p.name: p.read_text(encoding="utf-8") for p in LAB_02.glob("*.py")}
    read = "model.tok_emb.weight[idx] + model.pos_emb.weight[P : P + t]"
    kv = reference["kvcache.py"].replace(
        "model.tok_emb(idx) + model.pos_emb(torch.arange(P, P + t))", read
    )
    assert read in kv
    assert hidden("lab-02", reference | {"kvcache.py": kv}, {"kvcache.py"}) == []


def test_a_module_reached_through_a_dict_a_parameter_or_a_return_is_shown_to_read():
    """Red team 22: torch's attributes set through a dict, a function's parameter or what a
    function returns were left to the worker's check at run time; a reader is shown each line."""
    reference = {p.name: p.read_text(encoding="utf-8") for p in LAB_02.glob("*.py")}
    routes = {
        "_box = {'t': torch}\n_box['t'].polar = print\n": "changes _box['t'].polar",
        "def _tune(m, f):\n    m.polar = f\n\n\n_tune(torch, print)\n": "changes m.polar",
        "def _t():\n    return torch\n\n\n_t().polar = print\n": "changes _t().polar",
    }
    for code, words in routes.items():
        said = said_of(reference, "\n" + code)
        assert any(words in line for line in said), f"{code}: {said}"


def test_state_kept_from_one_call_to_the_next_is_shown_to_read():
    """Red team 26: a counter in a module-level list turned each trap on after the tests' few
    calls (eval mode for two estimates only); no TODO keeps state between calls."""
    reference = {p.name: p.read_text(encoding="utf-8") for p in LAB_02.glob("*.py")}
    ways = {
        "_SEEN = []\n\n\ndef _n(x):\n    _SEEN.append(x)\n    return _SEEN.count(x)\n": "_SEEN",
        "_N = {}\n\n\ndef _n(x):\n    _N[x] = _N.get(x, 0) + 1\n": "changes _N",
        "_C = 0\n\n\ndef _n():\n    global _C\n    _C += 1\n": "global _C",
        "def _n(x, _seen=[]):\n    return len(_seen)\n": "a mutable default",
        "def _n(x):\n    _n.calls = 1\n": "changes _n",
    }
    for code, words in ways.items():
        said = said_of(reference, "\n\n" + code)
        assert any("keeps state between calls" in s and words in s for s in said), f"{code}: {said}"


def said_of(reference: dict[str, str], code: str) -> list[str]:
    """What the grader lists to read in lab-02's reference with `code` after its layers.py."""
    return hidden("lab-02", reference | {"layers.py": reference["layers.py"] + code}, {"layers.py"})


def test_a_fifo_named_as_a_starter_file_is_named_never_opened(tmp_path):
    """Red team 19: a FIFO submitted as a starter file (opening it would wait for good)."""
    sub = folder(tmp_path / "sub", files({A: A}))
    os.mkfifo(sub / Path(W).name)
    m = match(sub, tmp_path / "scratch", WANTED)
    assert m.missing == [W] and m.files == {A: sub / A}, m
    assert m.stray == [f"{Path(W).name} (not a regular file, not read)"], m
