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


def test_the_command_line_parser_loads_neither_torch_nor_nemo():
    """``nemo-pc --help`` and argument errors stay instant: every command imports its heavy modules in ``run``."""
    code = "import sys; from nemo_pc.cli import build_parser; build_parser(); "
    code += "print(sorted({'torch', 'nemo'} & set(sys.modules)))"
    assert _python(code) == "[]"


def test_the_installed_startup_hook_registers_the_prefix_without_any_nemo_pc_import():
    # NeMo's own scripts that restore a .nemo directly (the cache-aware streaming script) never import nemo_pc
    code = "import nemo.core.classes.common as c; print(c.ALLOWED_TARGET_PREFIXES.count('nemo_pc.'))"
    import sysconfig

    no_pth = f"import sys; sys.path.append({sysconfig.get_paths()['purelib']!r}); " + code
    done = subprocess.run([sys.executable, "-S", "-c", no_pth], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "0"  # site-packages without its .pth files: no prefix
    assert _python(code) == "1"


def test_nemo_restores_a_nemo_pc_model_in_a_process_that_never_imports_nemo_pc(tmp_path):
    from omegaconf import OmegaConf

    from nemo_pc.models import EncDecRNNTPCBPEModel
    from nemo_pc.testing.asr import tiny_model_config, train_tokenizer, write_pc_manifest

    manifest = write_pc_manifest(tmp_path / "data")
    model = EncDecRNNTPCBPEModel(OmegaConf.create(tiny_model_config(train_tokenizer(manifest, tmp_path / "tok"))))
    model.save_to(str(tmp_path / "tiny.nemo"))
    code = (
        "from nemo.collections.asr.models import ASRModel; "
        f"m = ASRModel.restore_from({str(tmp_path / 'tiny.nemo')!r}, map_location='cpu'); print(type(m).__name__)"
    )
    assert _python(code) == "EncDecRNNTPCBPEModel"
