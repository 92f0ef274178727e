"""Stand-ins for modules JoeyNMT 2.3 imports that Debian lacks and that its
data, batching, model, search and checkpoint paths never call
(tensorboard logging; sacrebleu scoring unless sacreBLEU is importable,
as make_joey_test.sh makes it)."""
import sys
import types


def install():
    tb = types.ModuleType("torch.utils.tensorboard")

    class SummaryWriter:
        def __init__(self, *a, **k):
            pass

        def add_scalar(self, *a, **k):
            pass

        def close(self):
            pass

    tb.SummaryWriter = SummaryWriter
    sys.modules["torch.utils.tensorboard"] = tb
    try:
        # make_joey_test.sh puts sacreBLEU's own tree on PYTHONPATH: joeynmt
        # test scores with it.
        import sacrebleu.metrics  # noqa: F401
    except ImportError:
        for name in ("sacrebleu", "sacrebleu.metrics"):
            sys.modules.setdefault(name, types.ModuleType(name))
        sys.modules["sacrebleu.metrics"].BLEU = sys.modules["sacrebleu.metrics"].CHRF = object
