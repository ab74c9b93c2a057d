"""README.md and docs/ against the repository: rendered result blocks are current, every results file, page and
script they name exists, and every flag they pass to a script or a ``nemo-pc`` command is one it accepts."""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nemo_pc.testing.benchmarks import load_benchmark

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
INLINE = re.compile(r"`([^`\n]+)`")
RESULTS_PATH = re.compile(r"benchmarks/results/[\w./@{},-]*[\w/}]")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
PAGE = re.compile(r"(?<![\w/])(docs/[\w-]+\.md|manifests/README\.md)")
SCRIPT = re.compile(r"(?<![\w/.])((?:examples|benchmarks|scripts)/[\w/]+\.py)\b([^|;&#\n]*)")
NEMO_PC = re.compile(r"(?<![\w-])nemo-pc ([a-z][\w-]*)([^|;&#\n]*)")
DEMO_ARGS = re.compile(r"DEMO_ARGS=\"([^\"]*)\"")
FLAG = re.compile(r"(?<![\w-])(--[A-Za-z][\w-]*)")


def _name(path: Path) -> str:
    return str(path.relative_to(REPO))


def _commands(text: str) -> list[str]:
    """Code of a markdown text: each fenced block's lines (continuations joined, comments cut) and inline spans."""
    lines = []
    for block in FENCE.findall(text):
        lines += [line.split(" # ")[0] for line in block.replace("\\\n", " ").splitlines()]
    return lines + INLINE.findall(FENCE.sub("", text))


@functools.cache
def _tracked() -> set[str] | None:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return set(out.splitlines())


def _expand(path: str) -> list[str]:
    """``a{,_b}.json`` -> ``a.json``, ``a_b.json`` (one brace group, as the docs write them)."""
    m = re.search(r"\{([^{}]*)\}", path)
    return [path[: m.start()] + part + path[m.end() :] for part in m.group(1).split(",")] if m else [path]


def _exists(path: str) -> bool:
    tracked = _tracked()
    target = REPO / path
    if tracked is None:
        return target.exists()
    prefix = path.rstrip("/") + "/"
    return path in tracked or any(name.startswith(prefix) for name in tracked)


# rendered blocks


@pytest.mark.parametrize("doc", DOCS, ids=_name)
def test_rendered_blocks_are_current(doc):
    stale = load_benchmark("render_results").stale_blocks(doc)
    assert not stale, f"{_name(doc)}: stale blocks {stale}: run .venv/bin/python benchmarks/render_results.py"


def test_readme_renders_the_default_run_and_the_claims():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert "<!-- results:demo benchmarks/results/demo_default_whisper -->" in text
    assert "<!-- results:claims benchmarks/results/" in text
    assert text.index("make demo") < text.index("## What it is") and "make test" in text.split("## What it is")[0]


def _write_gap(path: Path, wer: float) -> None:
    path.write_text(json.dumps({"model": "m.nemo", "utterances": 5, "wer": {"train": 0.1, "dev": wer}}))


def test_render_check_and_errors(tmp_path):
    render = load_benchmark("render_results")
    source = tmp_path / "gap.json"
    _write_gap(source, 0.25)
    doc = tmp_path / "doc.md"
    doc.write_text(f"# t\n\n<!-- results:train_dev_gap {source} -->\nold\n<!-- results:end -->\n\nafter\n")
    assert render.stale_blocks(doc) == [f"train_dev_gap {source}"]
    assert render.render_file(doc) == 1
    once = doc.read_text()
    assert "| `m.nemo` | 10.0% | 25.0% |" in once and once.endswith("<!-- results:end -->\n\nafter\n")
    assert render.stale_blocks(doc) == [] and render.render_file(doc) == 1 and doc.read_text() == once
    _write_gap(source, 0.5)  # the source changed: the block is stale until rendered again
    assert render.stale_blocks(doc) == [f"train_dev_gap {source}"]
    assert render.main(["--check", str(doc)]) == 1
    with pytest.raises(ValueError, match="no results block of kind claims"):
        render.render_file(doc, {"claims": str(source)})
    source.unlink()
    with pytest.raises(ValueError, match="no such results file"):
        render.stale_blocks(doc)
    assert render.main(["--check", str(doc)]) == 2
    script = "benchmarks/quality_train_dev_gap.py"
    load_benchmark("suite").write_results(source, {"model": "m.nemo", "utterances": 5, "wer": {"dev": 0.5}},
                                          argv=[script, "--json", "x.json"])  # fmt: skip
    made = json.loads(source.read_text())["provenance"]
    assert made["command"] == f"python {script} --json x.json" and made["date"].endswith(" UTC")
    render.render_file(doc)
    assert f"`python {script} --json x.json`, revision " in doc.read_text()
    doc.write_text(f"<!-- results:train_dev_gap {source} -->\nno end\n")
    with pytest.raises(ValueError, match="not closed"):
        render.stale_blocks(doc)
    doc.write_text(f"<!-- results:formatter_loso {source} {source} -->\n<!-- results:end -->\n")
    with pytest.raises(ValueError, match="one results file per block"):
        render.stale_blocks(doc)
    doc.write_text("<!-- results:nosuch x.json -->\n<!-- results:end -->\n")
    with pytest.raises(ValueError, match="unknown block kind"):
        render.stale_blocks(doc)


# files and pages


@pytest.mark.parametrize("doc", DOCS, ids=_name)
def test_cited_results_files_are_in_the_repository(doc):
    text = doc.read_text(encoding="utf-8")
    missing = [p for raw in sorted(set(RESULTS_PATH.findall(text))) for p in _expand(raw) if not _exists(p)]
    assert not missing, f"{_name(doc)} cites results files that git does not hold: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=_name)
def test_linked_pages_exist(doc):
    text = doc.read_text(encoding="utf-8")
    links = [(doc.parent / link).resolve() for link in LINK.findall(text) if "://" not in link]
    links += [REPO / page for page in PAGE.findall(text)]
    missing = sorted({str(p.relative_to(REPO)) if p.is_relative_to(REPO) else str(p) for p in links if not p.exists()})
    assert not missing, f"{_name(doc)} links pages that do not exist: {missing}"


# scripts and flags


def _invocations() -> list[tuple[str, str, str]]:
    """(document, program, flag) for every flag the docs (and the Makefile's DEMO_ARGS) pass to a program."""
    found = []
    sources = [(_name(doc), _commands(doc.read_text(encoding="utf-8"))) for doc in DOCS]
    sources.append(("Makefile", (REPO / "Makefile").read_text(encoding="utf-8").splitlines()))
    for name, lines in sources:
        for line in lines:
            for script, args in SCRIPT.findall(line):
                found += [(name, script, flag) for flag in FLAG.findall(args)] or [(name, script, "")]
            for command, args in NEMO_PC.findall(line):
                found += [(name, f"nemo-pc {command}", flag) for flag in FLAG.findall(args)] or [
                    (name, f"nemo-pc {command}", "")
                ]
            for args in DEMO_ARGS.findall(line):
                found += [(name, "examples/demo_pc.py", flag) for flag in FLAG.findall(args)]
    return found


@functools.cache
def _nemo_pc_parsers() -> dict[str, set[str]]:
    """Every ``nemo-pc`` command's option strings from the real parser (imports each command's module)."""
    from nemo_pc.cli import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return {name: set(sub._option_string_actions) for name, sub in commands.choices.items()}


def _nemo_pc_has(command: str, flag: str) -> bool | None:
    """Whether ``nemo-pc command`` takes ``flag`` (None: no such command). The command module's source answers first;
    the parser is built only when it does not show the flag (a module may import NeMo, which takes seconds)."""
    from nemo_pc.cli import COMMANDS

    if command not in COMMANDS:
        return None
    module = REPO.joinpath(*COMMANDS[command][0].split(".")).with_suffix(".py")
    if not flag or flag in _static_options(str(module.relative_to(REPO))):
        return True
    return flag in _nemo_pc_parsers().get(command, set())


@functools.cache
def _static_options(script: str) -> frozenset[str]:
    """Option strings of the ``add_argument`` calls in the script's source (no import)."""
    tree = ast.parse((REPO / script).read_text(encoding="utf-8"))
    options = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "add_argument":
            options |= {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return frozenset(options)


@functools.cache
def _help_options(script: str) -> frozenset[str]:
    """Option strings of ``python script --help`` (one subprocess per script, only where the source does not show
    a flag: parsers built from helpers of other modules)."""
    run = subprocess.run([sys.executable, script, "--help"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"{script} --help failed: {run.stderr.strip()[-500:]}"
    return frozenset(FLAG.findall(run.stdout))


def _is_hydra(script: str) -> bool:
    return "hydra_runner" in (REPO / script).read_text(encoding="utf-8")


def _present_name(program: str) -> str:
    """A benchmark script by its present name (a rendered block quotes the command of a past run, which may name
    the script by a former one: ``suite.RENAMED``)."""
    folder, _, name = program.rpartition("/")
    renamed = load_benchmark("suite").RENAMED
    return f"{folder}/{renamed[name[:-3]]}.py" if folder == "benchmarks" and name[:-3] in renamed else program


def test_named_scripts_and_flags_exist():
    problems = []
    for doc, raw, flag in _invocations():
        program = _present_name(raw)
        if program.startswith("nemo-pc "):
            found = _nemo_pc_has(program.split()[1], flag)
            if found is None:
                problems.append(f"{doc}: `{program}` is not a nemo-pc command")
            elif not found:
                problems.append(f"{doc}: `{program}` has no {flag}")
            continue
        if not (REPO / program).parent.is_dir():  # NeMo's scripts (examples/asr/, scripts/...): NeMo's repository
            continue
        if not (REPO / program).is_file():
            problems.append(f"{doc}: {program} does not exist")
        elif flag and not _is_hydra(program) and flag not in _static_options(program):
            if flag not in _help_options(program):
                problems.append(f"{doc}: {program} has no {flag}")
    assert not problems, "\n".join(sorted(set(problems)))


# configs against the docs


def _conformer_defaults() -> dict:
    """Defaults of NeMo's ``ConformerEncoder.__init__``, read from its source (importing NeMo's ASR costs seconds)."""
    import importlib.util

    spec = importlib.util.find_spec("nemo")
    source = Path(spec.submodule_search_locations[0]) / "collections" / "asr" / "modules" / "conformer_encoder.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ConformerEncoder"]
    (init,) = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
    args = init.args.args[-len(init.args.defaults) :]
    defaults = {a.arg: ast.literal_eval(d) for a, d in zip(args, init.args.defaults, strict=True)}
    # None means full context: ConformerEncoder._calc_context_sizes turns it into [[-1, -1]]
    return defaults | {"att_context_size": [-1, -1]} if defaults.get("att_context_size") is None else defaults


def test_rnnt_doc_keys_make_a_ctc_encoder_loadable():
    """docs/rnnt_pc.md names the keys that give the RNN-T config the encoder of configs/ctc; with them the two
    encoder configs are equal (a key one side leaves out takes NeMo's default)."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    import nemo_pc

    text = (REPO / "docs" / "rnnt_pc.md").read_text(encoding="utf-8")
    (block,) = [b for b in FENCE.findall(text) if "init_from_nemo_model.base.path=ctc_normalized.nemo" in b]
    overrides = re.findall(r"(model\.encoder\.[\w.]+=\S+)", block)
    assert len(overrides) >= 4
    encoders = {}
    for family, name, extra in (("rnnt", "rnnt_pc", overrides), ("ctc", "ctc_pc", [])):
        with initialize_config_dir(str(nemo_pc.CONFIG_DIR / family), version_base=None):
            encoders[family] = OmegaConf.to_container(compose(name, overrides=extra).model.encoder, resolve=False)
    defaults = _conformer_defaults()
    keys = set(encoders["rnnt"]) | set(encoders["ctc"])
    value = {f: {k: encoders[f].get(k, defaults.get(k, "<missing>")) for k in keys} for f in encoders}
    differ = {k: (value["rnnt"][k], value["ctc"][k]) for k in keys if value["rnnt"][k] != value["ctc"][k]}
    assert not differ, f"the RNN-T encoder with the docs' keys differs from configs/ctc's: {differ}"
