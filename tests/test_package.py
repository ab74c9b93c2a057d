import subprocess
import sys

from nemo_pc.cli import build_parser


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def test_import_is_cheap_and_does_not_load_nemo():
    assert _python("import sys, nemo_pc; print('nemo' in sys.modules, 'torch' in sys.modules)") == "False False"


def test_prefix_is_registered_when_nemo_loads_after_nemo_pc():
    code = "import nemo_pc; import nemo.core.classes.common as c; print(c.ALLOWED_TARGET_PREFIXES.count('nemo_pc.'))"
    assert _python(code) == "1"


def test_prefix_is_registered_when_nemo_was_loaded_first():
    code = "import nemo.core.classes.common as c; import nemo_pc; print(c.ALLOWED_TARGET_PREFIXES.count('nemo_pc.'))"
    assert _python(code) == "1"


def test_cli_lists_evaluate():
    parser = build_parser()
    args = parser.parse_args(["evaluate", "m.json", "--marks", ".,?!"])
    assert args.marks == ".,?!" and callable(args._run)


def test_every_registered_command_imports():
    import importlib

    from nemo_pc.cli import COMMANDS

    for module_name, _ in COMMANDS.values():
        module = importlib.import_module(module_name)
        assert callable(module.add_arguments) and callable(module.run), module_name
