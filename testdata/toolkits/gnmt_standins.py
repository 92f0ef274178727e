"""Stand-ins for modules that NVIDIA DeepLearningExamples' GNMT and the
MLPerf rnn_translator import but that Debian does not package, none of
them on the model's, the tokenizer's, the search's or the checkpoint's
path when they run on CPU in fp32 on one process:

  dllogger           DLE's metrics logging (train.py, translate.py, utils)
  pytablewriter      DLE's summary tables (printed as tab-separated rows)
  pynvml             DLE's gpu_affinity (nvmlInit on import; --affinity disabled)
  apex               DLE's fp16 optimizers and both repositories'
                     DistributedDataParallel (fp16 and multi-GPU only)
  mlperf_compliance  MLPerf's compliance log (gnmt_print), printed to stderr

A stand-in that would have to compute something refuses instead, so that
a run which needed the real module fails rather than silently differs."""
import sys
import types


def _module(name):
    mod = types.ModuleType(name)
    sys.modules[name] = mod
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, mod)
    return mod


def _refuse(what):
    def f(*args, **kwargs):
        raise RuntimeError("gnmt_standins: %s is not available (fp16/GPU/distributed only)" % what)
    return f


def _dllogger():
    m = _module("dllogger")

    class Verbosity:
        OFF, DEFAULT, VERBOSE = -1, 0, 1

    class _Backend:
        def __init__(self, *args, **kwargs):
            pass

    m.Verbosity = Verbosity
    m.JSONStreamBackend = m.StdOutBackend = _Backend
    m.init = lambda *a, **k: None
    m.log = lambda *a, **k: None
    m.metadata = lambda *a, **k: None
    m.flush = lambda *a, **k: None


def _pytablewriter():
    m = _module("pytablewriter")

    class MarkdownTableWriter:
        def __init__(self):
            self.table_name, self.headers, self.value_matrix = "", [], []

        def write_table(self):
            print(self.table_name)
            for row in [self.headers] + list(self.value_matrix):
                print("\t".join(str(v) for v in row))

    m.MarkdownTableWriter = MarkdownTableWriter


def _pynvml():
    # gpu_affinity calls nvmlInit when imported; its other calls refuse.
    m = _module("pynvml")
    m.nvmlInit = lambda: None
    m.nvmlDeviceGetCount = _refuse("pynvml.nvmlDeviceGetCount")
    m.nvmlDeviceGetHandleByIndex = _refuse("pynvml.nvmlDeviceGetHandleByIndex")


def _apex():
    _module("apex")
    amp = _module("apex.amp")
    amp.initialize = _refuse("apex.amp.initialize")
    amp.scale_loss = _refuse("apex.amp.scale_loss")
    amp.master_params = _refuse("apex.amp.master_params")
    state = _module("apex.amp._amp_state")
    state.loss_scalers = []
    par = _module("apex.parallel")

    class DistributedDataParallel:
        def __init__(self, *args, **kwargs):
            _refuse("apex.parallel.DistributedDataParallel")()

    par.DistributedDataParallel = DistributedDataParallel


def _mlperf_compliance():
    _module("mlperf_compliance")
    log = _module("mlperf_compliance.mlperf_log")

    class _Logger:
        propagate = False

    log.LOGGER = _Logger()
    log.ROOT_DIR_GNMT = ""

    def gnmt_print(key, value=None, stack_offset=0, **kwargs):
        print(":::MLPv0.5.0 gnmt %s: %r" % (key, value), file=sys.stderr)

    log.gnmt_print = gnmt_print

    # Tag names: the module's constants are strings naming themselves.
    def __getattr__(name):
        if name.isupper():
            return name
        raise AttributeError(name)

    log.__getattr__ = __getattr__


def install(repo):
    """Installs the stand-ins one repository needs: 'dle' or 'mlperf'."""
    if repo == "dle":
        _dllogger()
        _pytablewriter()
        _pynvml()
        _apex()
    elif repo == "mlperf":
        _apex()
        _mlperf_compliance()
    else:
        raise ValueError("gnmt_standins: unknown repository %r (want dle or mlperf)" % repo)
