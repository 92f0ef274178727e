"""Lists the inference options of OpenNMT-py, fairseq and JoeyNMT from
their own sources, one TSV per toolkit release (option, its other
spellings, where it comes from, default, help), for docs/options.md and cmd/attnx's
TestOptionsTable.

    /usr/bin/python3 testdata/options/extract_options.py \
        --onmt-git DIR --fairseq-git DIR --joey-git DIR --torchtext-git DIR \
        --out testdata/options

Each *-git is a clone or bare mirror of the project; the releases read are
OpenNMT-py v3.5.1 and 2.3.0, fairseq v0.12.2 and JoeyNMT v2.3 (and
torchtext 0.5.0, which OpenNMT-py 2.3.0 imports).

OpenNMT-py: the parser onmt_translate builds (onmt/bin/translate.py's
_get_parser) is built and its actions listed; the package is unpacked
from the release, pyonmttok is taken from PYTHONPATH, and what Debian
lacks is stood in for by testdata/toolkits/onmt_standins.py (building the
parser calls none of it).

fairseq: fairseq-generate's and fairseq-interactive's parser
(options.get_generation_parser(interactive=True), then the translation
task's arguments) is made of dataclass fields: they are read with ast from
fairseq/dataclass/configs.py (CommonConfig, DatasetConfig,
DistributedTrainingConfig, CheckpointConfig, CommonEvalConfig,
GenerationConfig, InteractiveConfig) and fairseq/tasks/translation.py
(TranslationConfig), each field NAME being --NAME with dashes as
gen_parser_from_dataclass spells it; get_parser's registry choices
(--tokenizer, --bpe, --scoring, ...; every setup_registry("--NAME") of the
package) and --task are added.

JoeyNMT: the keys of the testing section parse_test_args reads
(joeynmt/config.py: cfg.get("KEY"), cfg["KEY"] and "KEY" in cfg), and the
flags of python -m joeynmt (joeynmt/__main__.py's add_argument calls).
"""
import argparse
import ast
import os
import subprocess
import sys
import tarfile
import io
import tempfile


def show(git, tag, path):
    return subprocess.run(["git", "--git-dir", git, "show", f"{tag}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def commit(git, tag):
    return subprocess.run(["git", "--git-dir", git, "rev-parse", tag + "^{commit}"],
                          check=True, capture_output=True, text=True).stdout.strip()


def clean(s):
    return " ".join(str(s).split()).replace("\t", " ")


def write(out, name, header, rows):
    path = os.path.join(out, name)
    with open(path, "w") as f:
        f.write("# " + header + "\n")
        f.write("option\taliases\tsource\tdefault\thelp\n")
        for r in rows:
            f.write("\t".join(clean(x) for x in r) + "\n")
    print(path, len(rows))


ONMT_CHILD = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
import onmt_standins
onmt_standins.install()
from onmt.bin.translate import _get_parser
p = _get_parser()
rows = []
for a in p._actions:
    if not a.option_strings or a.dest == "help":
        continue
    single = [o for o in a.option_strings if o.startswith("-") and not o.startswith("--")]
    name = single[0] if single else a.option_strings[0]
    group = ""
    for g in p._action_groups:
        if a in g._group_actions:
            group = g.title
    d = a.default
    aliases = ",".join(o for o in a.option_strings if o != name)
    rows.append([name, aliases, "onmt_translate " + group, "" if d is None else repr(d), a.help or ""])
print(json.dumps(rows))
'''


def unpack(git, tag, tmp, *paths):
    arch = subprocess.run(["git", "--git-dir", git, "archive", tag, *paths],
                          check=True, capture_output=True).stdout
    tarfile.open(fileobj=io.BytesIO(arch)).extractall(tmp)


def onmt(git, tag, torchtext_git=None):
    import json
    tmp = tempfile.mkdtemp(prefix="onmt-opts-")
    unpack(git, tag, tmp, "onmt", ":!onmt/tests")
    if torchtext_git:
        # 2.3.0 imports torchtext's data package (0.5.0's is pure Python).
        unpack(torchtext_git, "0.5.0", tmp, "torchtext")
    standins = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "toolkits")
    r = subprocess.run([sys.executable, "-c", ONMT_CHILD, tmp, standins],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"OpenNMT-py {tag}: building the parser failed:\n{r.stderr}")
    return json.loads(r.stdout.splitlines()[-1])


def dataclass_fields(src, classes):
    rows = []
    tree = ast.parse(src)
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or node.name not in classes:
            continue
        for st in node.body:
            if not isinstance(st, ast.AnnAssign) or not isinstance(st.target, ast.Name):
                continue
            name = st.target.id
            if name.startswith("_"):
                continue
            default, help_, alias = "", "", ""
            v = st.value
            if isinstance(v, ast.Call) and getattr(v.func, "id", "") == "field":
                for kw in v.keywords:
                    if kw.arg in ("default", "default_factory"):
                        default = ast.unparse(kw.value)
                    if kw.arg == "metadata" and isinstance(kw.value, ast.Dict):
                        for k, val in zip(kw.value.keys, kw.value.values):
                            if isinstance(k, ast.Constant) and k.value == "argparse_alias":
                                alias = ast.literal_eval(val)
                            if isinstance(k, ast.Constant) and k.value == "help":
                                try:
                                    help_ = ast.literal_eval(val)
                                except ValueError:
                                    help_ = ast.unparse(val)
            elif v is not None:
                default = ast.unparse(v)
            rows.append(["--" + name.replace("_", "-"), alias, node.name, default, help_])
    return rows


def fairseq(git, tag):
    cfg = show(git, tag, "fairseq/dataclass/configs.py")
    rows = dataclass_fields(cfg, ["CommonConfig", "DatasetConfig", "DistributedTrainingConfig",
                                  "CheckpointConfig", "CommonEvalConfig", "GenerationConfig",
                                  "InteractiveConfig"])
    # configs.py's order is the file's; keep the parser's: common first.
    order = ["CommonConfig", "DatasetConfig", "DistributedTrainingConfig", "CommonEvalConfig",
             "GenerationConfig", "CheckpointConfig", "InteractiveConfig"]
    rows.sort(key=lambda r: order.index(r[2]))
    files = subprocess.run(["git", "--git-dir", git, "grep", "-l", "setup_registry(", tag, "--",
                            "fairseq/*.py"], check=True, capture_output=True, text=True).stdout
    for line in files.split():
        path = line.split(":", 1)[1]
        for node in ast.walk(ast.parse(show(git, tag, path))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "setup_registry" \
                    and node.args and isinstance(node.args[0], ast.Constant):
                rows.append([node.args[0].value, "", "registry (" + path + ")", "", "choice of a registered implementation"])
    rows.append(["--task", "", "get_parser", "'translation'", "task"])
    seen = {r[0] for r in rows}
    for r in dataclass_fields(show(git, tag, "fairseq/tasks/translation.py"), ["TranslationConfig"]):
        if r[0] not in seen:
            rows.append(r)
    # The translation task's data directory is its positional argument.
    for r in rows:
        if r[0] == "--data":
            r[0] = "data"
    seen = set()
    out = []
    for r in rows:
        if r[0] in seen:
            continue
        seen.add(r[0])
        out.append(r)
    return out


def joey(git, tag):
    cfg = ast.parse(show(git, tag, "joeynmt/config.py"))
    rows = []
    fn = [n for n in cfg.body if isinstance(n, ast.FunctionDef) and n.name == "parse_test_args"][0]
    keys = []
    for node in ast.walk(fn):
        key, default = None, ""
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "get" \
                and getattr(node.func.value, "id", "") == "cfg" and isinstance(node.args[0], ast.Constant):
            key = node.args[0].value
            default = ast.unparse(node.args[1]) if len(node.args) > 1 else "None"
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In) \
                and isinstance(node.left, ast.Constant) and getattr(node.comparators[0], "id", "") == "cfg":
            key = node.left.value
        elif isinstance(node, ast.Subscript) and getattr(node.value, "id", "") == "cfg" \
                and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        if key is not None:
            keys.append((node.lineno, node.col_offset, key, default))
    seen = {}
    for _, _, key, default in sorted(keys):
        if key not in seen:
            seen[key] = default
        elif default and not seen[key]:
            seen[key] = default
    for key, default in seen.items():
        rows.append(["testing." + key, "", "config.py parse_test_args", default, ""])
    main = ast.parse(show(git, tag, "joeynmt/__main__.py"))
    for node in ast.walk(main):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            names = [a.value for a in node.args if isinstance(a, ast.Constant)]
            long_ = [n for n in names if n.startswith("--")]
            name = long_[0] if long_ else names[0]
            help_ = ""
            default = ""
            for kw in node.keywords:
                if kw.arg == "help":
                    help_ = ast.literal_eval(kw.value)
                if kw.arg == "choices":
                    default = "one of " + ast.unparse(kw.value)
            rows.append([name, ",".join(n for n in names if n != name), "python -m joeynmt (__main__.py)", default, help_])
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onmt-git", required=True)
    ap.add_argument("--fairseq-git", required=True)
    ap.add_argument("--joey-git", required=True)
    ap.add_argument("--torchtext-git", required=True, help="pytorch/text, for OpenNMT-py 2.3.0's imports")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    for tag, name, tt in (("v3.5.1", "onmt-3.5.1.tsv", None), ("2.3.0", "onmt-2.3.0.tsv", a.torchtext_git)):
        write(a.out, name, f"OpenNMT-py {tag} ({commit(a.onmt_git, tag)}): onmt_translate's parser (onmt/bin/translate.py _get_parser)",
              onmt(a.onmt_git, tag, tt))
    write(a.out, "fairseq-0.12.2.tsv",
          f"fairseq v0.12.2 ({commit(a.fairseq_git, 'v0.12.2')}): fairseq-generate/fairseq-interactive's parser (dataclass/configs.py, tasks/translation.py, registries)",
          fairseq(a.fairseq_git, "v0.12.2"))
    write(a.out, "joeynmt-2.3.tsv",
          f"JoeyNMT v2.3 ({commit(a.joey_git, 'v2.3')}): the testing section (config.py parse_test_args) and python -m joeynmt's flags",
          joey(a.joey_git, "v2.3"))


if __name__ == "__main__":
    main()
