"""Hidden evaluation protocols that notebook 03's tests hand to ``is_fair_protocol`` as black boxes,
and a probe that ``held_out_accuracy``'s hidden tests hand over as one.

Protocols map (features (N, d), labels (N,)) to a test accuracy in [0, 1]; some are fair and some
leak, as real evaluation code does. Every one is deterministic: its random split depends only on a
fixed seed. Trusted-side only (see :class:`grader.sandbox.codec.BlackBox`).
"""
import torch

from grader.fixtures.addition_vs_concatenation import (_accuracy, _split, fair_split,  # noqa: F401
                                                       lda_probe, ridge_probe)


# -- a probe that only hidden tests hand over (as a black box) ------------------------------------
def nearest_centroid_probe(features: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The nearest class mean as a linear rule: column c is [mu_c; -|mu_c|^2 / 2]."""
    x, labels = features.double(), labels.long()
    classes = int(labels.max()) + 1
    counts = torch.bincount(labels, minlength=classes).double().clamp_min(1)
    means = torch.zeros(classes, x.shape[1], dtype=torch.float64).index_add_(0, labels, x) / counts[:, None]
    return torch.cat([means.T, -(means ** 2).sum(1)[None] / 2], dim=0)


# -- fair protocols: uninformative features score at chance, in expectation -----------------------
def fair_ridge_split(features: torch.Tensor, labels: torch.Tensor) -> float:
    """Fit the ridge probe on 70% of the rows (random), score it on the other 30%."""
    train, test = _split(len(labels), 0.7, 11)
    return _accuracy(features[test], labels[test], ridge_probe(features[train], labels[train]))


def fair_cross_validation(features: torch.Tensor, labels: torch.Tensor, folds: int = 4) -> float:
    """k-fold cross-validation of the nearest-centroid probe: the mean of the k held-out accuracies."""
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(5))
    scores = []
    for part in order.chunk(folds):
        keep = torch.ones(len(labels), dtype=torch.bool)
        keep[part] = False
        scores.append(_accuracy(features[part], labels[part], nearest_centroid_probe(features[keep], labels[keep])))
    return sum(scores) / len(scores)


# -- leaky protocols: the test rows, or their labels, reach the fit or the choice ------------------
def fit_on_all_rows(features: torch.Tensor, labels: torch.Tensor) -> float:
    """Fits LDA on every row, then scores the random "test" half, which it has seen."""
    _, test = _split(len(labels), 0.5, 0)
    return _accuracy(features[test], labels[test], lda_probe(features, labels))


def scored_on_training_rows(features: torch.Tensor, labels: torch.Tensor) -> float:
    """Fits LDA on a random half and reports its accuracy on that same half."""
    train, _ = _split(len(labels), 0.5, 0)
    return _accuracy(features[train], labels[train], lda_probe(features[train], labels[train]))


def best_of_splits(features: torch.Tensor, labels: torch.Tensor, tries: int = 10) -> float:
    """Tries several random splits and reports the best test accuracy (selection on the test set)."""
    return max(fair_split(features, labels, seed=seed) for seed in range(tries))


def unshuffled_split(features: torch.Tensor, labels: torch.Tensor) -> float:
    """First half of the rows in the order given for training, second half for testing (no shuffle):
    fair only if the rows come in random order."""
    cut = len(labels) // 2
    return _accuracy(features[cut:], labels[cut:], lda_probe(features[:cut], labels[:cut]))


# -- feature selection: a leak that only some shapes of data show ----------------------------------
def _best_features(features: torch.Tensor, labels: torch.Tensor, k: int) -> torch.Tensor:
    """The k columns with the largest ratio of between-class to within-class variance (an F score)."""
    x, labels = features.double(), labels.long()
    classes = int(labels.max()) + 1
    counts = torch.bincount(labels, minlength=classes).double().clamp_min(1)
    means = torch.zeros(classes, x.shape[1], dtype=torch.float64).index_add_(0, labels, x) / counts[:, None]
    between = (counts[:, None] * (means - x.mean(0)) ** 2).sum(0)
    within = ((x - means[labels]) ** 2).sum(0).clamp_min(1e-12)
    return torch.argsort(between / within, descending=True)[:k]


def selected_on_all_rows(features: torch.Tensor, labels: torch.Tensor, k: int = 2) -> float:
    """Keeps the 2 features that best separate the classes over every row, then fits LDA on a random
    half and scores the other: the test rows' labels chose the features. On uninformative features it
    scores about 0.03 above chance for N = 200, d = 20, C = 4, and about 0.1 for N = 100, d = 64, C = 2."""
    return fair_split(features[:, _best_features(features, labels, k)], labels)


def selected_on_training_rows(features: torch.Tensor, labels: torch.Tensor, k: int = 2) -> float:
    """The same selection made on the training half only, read by the nearest centroid: fair."""
    train, test = _split(len(labels), 0.5, 0)
    columns = _best_features(features[train], labels[train], k)
    return _accuracy(features[test][:, columns], labels[test],
                     nearest_centroid_probe(features[train][:, columns], labels[train]))

