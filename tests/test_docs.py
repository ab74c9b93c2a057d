"""README.md and docs/ against the repository: rendered result blocks are current, every results file, page and
script they name exists, every command they give runs as written (its script, module, ``nemo-pc`` command or make
target exists and takes each flag given), and every results file names the run that made it."""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from benchmark_loader import load_benchmark

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
COMMAND = re.compile(
    r"(?:[A-Z][A-Z0-9_]*=\S*\s+)*(?P<program>\.venv/bin/python|python3?|make)(?=\s|$)(?P<args>[^|;&#<>]*)"
)
MAKE_TARGET = re.compile(r"^([\w.-]+(?:[ \t]+[\w.-]+)*)[ \t]*:(?!=)", re.M)
NEMO_SAID = re.compile(r"`\$NEMO`[^.]*\b(?:checkout|clone)\b")


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
    # the demo block comes from one clean run: one invocation from an empty folder, at a recorded revision
    blocks = re.findall(r"<!-- results:demo (benchmarks/results/\S+) -->", text)
    assert len(blocks) == 1, blocks
    runs = json.loads((REPO / blocks[0] / "timings.json").read_text())["runs"]
    assert len(runs) == 1 and runs[0]["from_empty_folder"] and len(runs[0]["revision"]) == 40, runs
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
    load_benchmark("suite").write_results(
        source, {"model": "m.nemo", "utterances": 5, "wer": {"dev": 0.5}}, argv=[script, "--json", "x.json"]
    )
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


# results files and their runs

# Results files (and folders) from before `suite.write_results` recorded a `provenance` (command, revision, date),
# each with the script that makes it again (made again, it records its run and leaves this list). A file whose run
# cannot be named afterwards (made by no script now, or its command or revision not recorded) is moved to
# benchmarks/results/archive/ (not checked); one named afterwards gets a `provenance` whose `recorded` says from what.
PREDATE_PROVENANCE = {
    # demo output folders: the demo writes no provenance; `config.json` holds the settings of the run
    "benchmarks/results/demo_default/": "examples/demo_pc.py",
    "benchmarks/results/demo_default_whisper/": "examples/demo_pc.py",
    "benchmarks/results/demo_default_aed/": "examples/demo_pc.py",
}


def _results_files() -> list[str]:
    """The results JSON files git holds, outside ``archive/``."""
    tracked = _tracked()
    names = tracked if tracked is not None else {_name(p) for p in (REPO / "benchmarks" / "results").rglob("*.json")}
    return sorted(
        name
        for name in names
        if name.startswith("benchmarks/results/")
        and name.endswith(".json")
        and not name.startswith("benchmarks/results/archive/")
        and (REPO / name).is_file()
    )


def _listed_as(name: str, known: str) -> bool:
    """Whether results file ``name`` is ``known``, a file or a folder (``.../``) of :data:`PREDATE_PROVENANCE`."""
    return name == known or (known.endswith("/") and name.startswith(known))


def _named_by_run_folder(name: str) -> bool:
    """Whether results file ``name`` lies in a kept demo folder whose ``timings.json`` names every invocation's
    command, revision and date, its finish or, for a run stopped before its end, its start
    (:mod:`nemo_pc.pipelines.demo.runs`)."""
    parts = Path(name).parts
    for depth in range(len(parts) - 1, 2, -1):
        timings = REPO.joinpath(*parts[:depth]) / "timings.json"
        if timings.is_file():
            runs = json.loads(timings.read_text(encoding="utf-8")).get("runs") or []
            # a run stopped before its end names its start instead of its finish
            named = [
                run.get("command") and run.get("revision") and (run.get("finished") or run.get("started"))
                for run in runs
            ]
            return bool(runs) and all(named)
    return False


def test_results_files_name_their_run():
    """Every results file records the command, revision and date that made it, or is one of the few known to predate
    that record; a file that cannot be made again is archived."""
    files, unnamed = _results_files(), []
    for name in files:
        if _named_by_run_folder(name):  # its demo folder's timings.json names the run (some files are JSON lines)
            continue
        made = json.loads((REPO / name).read_text(encoding="utf-8")).get("provenance") or {}
        named = all(made.get(key) for key in ("command", "revision", "date"))
        if not named and not any(_listed_as(name, known) for known in PREDATE_PROVENANCE):
            unnamed.append(name)
    assert not unnamed, f"results files without provenance (suite.write_results records it): {unnamed}"
    gone = [known for known in PREDATE_PROVENANCE if not any(_listed_as(name, known) for name in files)]
    assert not gone, f"PREDATE_PROVENANCE names files that are not results files any more: {gone}"
    scriptless = {known: script for known, script in PREDATE_PROVENANCE.items() if not (REPO / script).is_file()}
    assert not scriptless, f"no script makes these again: archive them (benchmarks/results/archive/): {scriptless}"


def test_other_results_files_name_their_run():
    """A results file that is not JSON (a log, a test report, a curve, ``run_all.md``) names its run through the JSON
    of that run beside it: the one whose name it extends (``h200_run1_tests.xml``: ``h200_run1.json``), which records
    its ``provenance``."""
    tracked = _tracked()
    if tracked is None:
        pytest.skip("needs the git checkout")
    others = sorted(
        name
        for name in tracked
        if name.startswith("benchmarks/results/")
        and not name.endswith(".json")
        and not name.startswith("benchmarks/results/archive/")
        and not any(_listed_as(name, known) for known in PREDATE_PROVENANCE)
        and not _named_by_run_folder(name)
    )
    unnamed = []
    for name in others:
        path = REPO / name
        records = [p for p in path.parent.glob("*.json") if path.stem == p.stem or path.stem.startswith(p.stem + "_")]
        made = json.loads(max(records, key=lambda p: len(p.stem)).read_text()).get("provenance") if records else None
        if not (made and all(made.get(key) for key in ("command", "revision", "date"))):
            unnamed.append(name)
    assert not unnamed, f"results files with no run record beside them (archive them, or add one): {unnamed}"


# scripts, commands and flags


def _python_program(args: list[str]) -> str | None:
    """What ``python ARGS`` runs: the script path, or ``-m module``; None for ``-c`` and a bare interpreter."""
    if not args or args[0] == "-c":
        return None
    return f"-m {args[1]}" if args[0] == "-m" and len(args) > 1 else args[0]


def _split(args: str) -> list[str]:
    try:
        return shlex.split(args)
    except ValueError:  # an unclosed quote or a trailing backslash: the words as written
        return args.split()


def _invocations() -> list[tuple[str, str, str]]:
    """(document, program, word) for every program the docs (and the Makefile) name: ``word`` is each flag it is
    given, each target of ``make``, each path given to ``-m pytest``, or ``""``. Programs: the scripts named anywhere
    in code, ``nemo-pc <command>``, and what a command line (``python``, ``.venv/bin/python``, ``make``) runs."""
    found = []
    sources = [(_name(doc), _commands(doc.read_text(encoding="utf-8"))) for doc in DOCS]
    sources.append(("Makefile", (REPO / "Makefile").read_text(encoding="utf-8").splitlines()))
    for name, lines in sources:
        for line in lines:
            named = [(script, args) for script, args in SCRIPT.findall(line)]
            named += [(f"nemo-pc {command}", args) for command, args in NEMO_PC.findall(line)]
            named += [("examples/demo_pc.py", args) for args in DEMO_ARGS.findall(line)]
            command = COMMAND.match(line.strip())
            if command and command["program"] == "make":
                found += [
                    (name, "make", word) for word in _split(command["args"]) if word[0] not in "-$" and "=" not in word
                ]
            elif command and _python_program(_split(command["args"])):
                args = _split(command["args"])
                named.append((_python_program(args), " ".join(args[2 if args[0] == "-m" else 1 :])))
            for program, args in named:
                words = FLAG.findall(args)
                if program == "-m pytest":
                    words += [word.split("::")[0] for word in _split(args) if not word.startswith("-")]
                found += [(name, program, word) for word in words] or [(name, program, "")]
    return found


@functools.cache
def _make_targets() -> frozenset[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    return frozenset(t for names in MAKE_TARGET.findall(text) for t in names.split())


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
def _help_options(program: tuple[str, ...]) -> frozenset[str]:
    """Option strings of ``python PROGRAM --help`` (one subprocess per program, only where the source does not show
    a flag: parsers built from helpers of other modules)."""
    run = subprocess.run([sys.executable, *program, "--help"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"{' '.join(program)} --help failed: {run.stderr.strip()[-500:]}"
    return frozenset(FLAG.findall(run.stdout))


def _is_hydra(script: str) -> bool:
    return "hydra_runner" in (REPO / script).read_text(encoding="utf-8")


def _module_file(module: str) -> str | None:
    """The repository file of a module of this package (``nemo_pc.x.y``), None for another package's."""
    if module.split(".")[0] != "nemo_pc":
        return None
    path = REPO.joinpath(*module.split("."))
    return _name(path / "__main__.py" if path.is_dir() else path.with_suffix(".py"))


def _module_problem(module: str, word: str) -> str | None:
    """What is wrong with ``python -m module`` given ``word``: this package's modules take their own flags, pytest
    the test paths; another package's module has only to exist."""
    script = _module_file(module)
    if (script is None and importlib.util.find_spec(module) is None) or (script and not (REPO / script).is_file()):
        return f"`python -m {module}`: no such module"
    if script is None:
        test_path = module == "pytest" and word and not word.startswith("-")
        return f"`python -m pytest {word}`: no such test file" if test_path and not _exists(word) else None
    has = not word or word in _static_options(script) or word in _help_options(("-m", module))
    return None if has else f"`python -m {module}` has no {word}"


def _problem(program: str, word: str) -> str | None:
    """What is wrong with running ``program`` with ``word`` as the docs write it, or None."""
    if program == "make":
        return None if word in _make_targets() else f"`make {word}`: the Makefile has no such target"
    if program.startswith("nemo-pc "):
        found = _nemo_pc_has(program.split()[1], word)
        return None if found else f"`{program}` " + ("is not a nemo-pc command" if found is None else f"has no {word}")
    if program.startswith("$NEMO/"):  # a script of NeMo's repository: a NeMo checkout, its flags are NeMo's
        return None
    if program.startswith("-m "):
        return _module_problem(program[3:], word)
    if not (REPO / program).is_file():
        return f"{program}: no such file here (NeMo's scripts are `$NEMO/<path>`)"
    if word and not _is_hydra(program) and word not in _static_options(program):
        return None if word in _help_options((program,)) else f"{program} has no {word}"
    return None


def test_commands_run_as_written():
    """Every script, ``nemo-pc`` command, module and make target that README.md and docs/ name exists, and takes
    each flag the docs give it (Hydra overrides ``key=value`` are not flags); NeMo's scripts are named by a NeMo
    checkout, ``$NEMO/...``."""
    problems = {f"{doc}: {problem}" for doc, program, word in _invocations() if (problem := _problem(program, word))}
    assert not problems, "\n".join(sorted(problems))


def test_hydra_commands_set_each_key_once():
    """No key is given twice to a Hydra script: Hydra silently keeps the last value (and stops on ``+key`` twice), so
    one of the two is a mistake."""
    twice = []
    for doc in DOCS:
        for line in _commands(doc.read_text(encoding="utf-8")):
            command = COMMAND.match(line.strip())
            if command and command["program"] != "make":
                keys = [m[1] for word in _split(command["args"]) if (m := re.match(r"[+~]*([\w.@/-]+)=", word))]
                twice += [
                    f"{_name(doc)}: {key} in `{line.strip()[:80]}...`"
                    for key in sorted(set(keys))
                    if keys.count(key) > 1
                ]
    assert not twice, "keys given twice:\n" + "\n".join(twice)


def test_nemo_scripts_say_where_they_live():
    """A doc that runs a script of NeMo's repository (``$NEMO/...``) says what ``$NEMO`` is."""
    unsaid = [
        _name(doc)
        for doc in DOCS
        if "$NEMO/" in (text := doc.read_text(encoding="utf-8")) and not NEMO_SAID.search(text)
    ]
    assert not unsaid, f"these docs run $NEMO/... without saying that $NEMO is a NeMo checkout: {unsaid}"


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
