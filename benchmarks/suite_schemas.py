"""Writes dpsyn/schemas/breast_cancer.yaml from the dataset's published description (sklearn DESCR / wdbc.names:
the documented range of each feature, four significant digits). Reads no row.

    python benchmarks/suite_schemas.py
"""

import math
from pathlib import Path

rows = """radius (mean):                        6.981  28.11
texture (mean):                       9.71   39.28
perimeter (mean):                     43.79  188.5
area (mean):                          143.5  2501.0
smoothness (mean):                    0.053  0.163
compactness (mean):                   0.019  0.345
concavity (mean):                     0.0    0.427
concave points (mean):                0.0    0.201
symmetry (mean):                      0.106  0.304
fractal dimension (mean):             0.05   0.097
radius (standard error):              0.112  2.873
texture (standard error):             0.36   4.885
perimeter (standard error):           0.757  21.98
area (standard error):                6.802  542.2
smoothness (standard error):          0.002  0.031
compactness (standard error):         0.002  0.135
concavity (standard error):           0.0    0.396
concave points (standard error):      0.0    0.053
symmetry (standard error):            0.008  0.079
fractal dimension (standard error):   0.001  0.03
radius (worst):                       7.93   36.04
texture (worst):                      12.02  49.54
perimeter (worst):                    50.41  251.2
area (worst):                         185.2  4254.0
smoothness (worst):                   0.071  0.223
compactness (worst):                  0.027  1.058
concavity (worst):                    0.0    1.252
concave points (worst):               0.0    0.291
symmetry (worst):                     0.156  0.664
fractal dimension (worst):            0.055  0.208"""


def nice(x):
    e = 10 ** math.floor(math.log10(x))
    for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * e >= x:
            return round(m * e, 10)


def fmt(x):
    return f"{x:.6g}"
out = ["""# Breast Cancer Wisconsin (Diagnostic), as bundled with scikit-learn (sklearn.datasets.load_breast_cancer;
# UCI id 17, Wolberg, Street & Mangasarian 1995, CC BY 4.0, doi:10.24432/C5DW2B). 569 tumours, 30 numeric
# features of cell nuclei from a digitized fine-needle-aspirate image, target diagnosis (malignant/benign).
#
# Public sources, never the rows:
#   [DOC]  the dataset's published description (sklearn's DESCR, copied from wdbc.names): the documented
#          range of each feature ("Summary Statistics") and "all feature values are recoded with four
#          significant digits"
# Bounds: [0, the documented maximum rounded up to 1-1.5-2-2.5-3-4-5-6-8-10 × 10^k, a cap of at least 25 %]:
# the documented range is about the published release, so the cap leaves room for a table of the same kind.
# Bins: 8 between the documented minimum and maximum (geometric where the range spans more than 10×,
# as for areas and standard errors), plus the margins to the bounds. decimals: four significant digits at
# the documented minimum's magnitude (one more place for safety), per [DOC].
# (The generator of this file is benchmarks/suite_schemas.py.)
schema_version: 1
name: breast_cancer
version: "1.0"
description: Breast Cancer Wisconsin (Diagnostic); predict malignant vs benign from nuclear features.
source: "UCI ML Repository id 17 (WDBC), via scikit-learn's bundled copy; CC BY 4.0"
target: diagnosis
population: uci-wdbc
population_size: 569         # instances, as wdbc.names states
columns:"""]
for line in rows.split("\n"):
    name, rest = line.split(":")
    lo, hi = map(float, rest.split())
    feat, kind = name.rsplit(" (", 1)
    kind = kind.rstrip(")")
    col = {"mean": f"mean_{feat}", "standard error": f"{feat}_error", "worst": f"worst_{feat}"}[kind].replace(" ", "_")
    cap = nice(hi * 1.25)
    if lo > 0 and hi / lo > 10:
        inner = [lo * (hi / lo) ** (i / 8) for i in range(9)]
    else:
        inner = [lo + (hi - lo) * i / 8 for i in range(9)]
    mag = lo if lo > 0 else (hi / 100)
    dec = max(0, 4 - math.floor(math.log10(mag)) - 1) + 1
    inner = [round(x, dec) for x in inner]
    edges = [0.0] + [x for x in inner if x > 0] + [cap]
    edges = sorted(set(edges))
    out.append(f"  - name: {col}\n    kind: numeric\n    bounds: [0, {fmt(cap)}]      # [DOC] range {lo:g}-{hi:g}\n"
               f"    bins: [{', '.join(fmt(e) for e in edges)}]\n    decimals: {dec}\n    tier: L2")
out.append("""  - name: diagnosis
    kind: categorical
    domain: [malignant, benign]   # [DOC] class labels
    tier: L2""")
open(Path(__file__).resolve().parents[1] / "dpsyn/schemas/breast_cancer.yaml", "w").write("\n".join(out) + "\n")
