# Prints testdata/numpy_permutation.json: np.random.seed(SEED) then
# np.random.permutation(N), as fairseq's ordered_indices shuffles a split
# under data_utils.numpy_seed (Debian's numpy 1.24.2).
import json

import numpy as np

out = {}
for seed, n in [(1, 100), (1, 48), (7, 1000), (0, 3), (4294967295, 20), (1, 1)]:
    np.random.seed(seed)
    out["%d/%d" % (seed, n)] = np.random.permutation(n).tolist()
print(json.dumps(out))
