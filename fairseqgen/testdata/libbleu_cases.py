# Prints, as testdata/libbleu_cases.json, fairseq 0.12.2's libbleu statistics for hand-made sentence pairs
# (fairseq/scoring/bleu.py's Scorer.add, unk 3 masked in the reference).
import ctypes, glob, json, os
C = ctypes.cdll.LoadLibrary(glob.glob(os.environ["FAIRSEQ_DIR"] + "/fairseq/libbleu*.so")[0])
class S(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ["reflen","predlen","match1","count1","match2","count2","match3","count3","match4","count4"]]
pairs = [
    ([4, 5, 6, 7, 2], [4, 5, 6, 7, 2]),
    ([4, 5, 6, 7, 8, 2], [4, 5, 9, 7, 8, 2]),
    ([1, 1, 4, 5, 2, 2], [4, 5, 2, 1]),
    ([4, 3, 5, 2], [4, 3, 5, 2]),
    ([4, 5, 2], [2]),
    ([2], [4, 2]),
    ([300, 65536, 70000, 300, 2], [300, 65536, 300, 70000, 300, 2]),
    ([4, 4, 4, 4, 2], [4, 4, 2]),
]
out = []
s = S(); C.bleu_zero_init(ctypes.byref(s))
for ref, pred in pairs:
    r = [(-999 if x == 3 else x) for x in ref]
    ra = (ctypes.c_int * len(r))(*r); pa = (ctypes.c_int * len(pred))(*pred)
    C.bleu_add(ctypes.byref(s), ctypes.c_size_t(len(r)), ra, ctypes.c_size_t(len(pred)), pa, ctypes.c_int(1), ctypes.c_int(2))
    out.append({"ref": ref, "pred": pred, "stat": [getattr(s, n) for n, _ in S._fields_]})
print(json.dumps(out))
