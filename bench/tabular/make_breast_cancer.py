"""The Wisconsin diagnostic breast-cancer table (569 samples, 30 features) as a TSV for
luminome-train tabular: columns sample, the 30 features (scikit-learn's names, spaces as _),
diagnosis (benign / malignant). Read from the CSV that ships inside scikit-learn's wheel, so no
download is needed.

    python bench/tabular/make_breast_cancer.py OUT.tsv
"""

import sys

from sklearn.datasets import load_breast_cancer


def main(out):
    d = load_breast_cancer()
    names = [n.replace(" ", "_") for n in d.feature_names]
    with open(out, "w") as f:
        f.write("\t".join(["sample"] + names + ["diagnosis"]) + "\n")
        for i, (row, y) in enumerate(zip(d.data, d.target)):
            # sklearn: target 0 = malignant, 1 = benign.
            label = "malignant" if y == 0 else "benign"
            cells = [f"bc{i + 1:03d}"] + [repr(float(v)) for v in row] + [label]
            f.write("\t".join(cells) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
