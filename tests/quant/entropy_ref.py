"""TensorRT's entropy calibration in numpy, written after NVIDIA's pytorch-quantization
(calib/histogram.py, _compute_amax_entropy): the reference that src/quant/calibrate.cpp's amax_entropy
must agree with. Kept deliberately close to that code (digitize over linspace, the last argmin) rather
than to ours, so that a difference in grouping, ties or zero handling shows up."""
import numpy as np


def histogram(values, amax, bins=2048):
    """|x| binned as infera's calibrator does: floor(|x| * bins / amax), the top bin closed."""
    a = np.abs(np.asarray(values, dtype=np.float32)).ravel().astype(np.float64)
    idx = np.minimum(bins - 1, (a * (bins / float(np.float32(amax)))).astype(np.int64))
    return np.bincount(idx, minlength=bins).astype(np.float64)


def _kl(p, q):
    """scipy.stats.entropy(p, q): both normalized; infinite where p has mass and q none."""
    p = p / p.sum()
    q = q / q.sum()
    m = p > 0
    if np.any(q[m] == 0):
        return np.inf
    return float(np.sum(p[m] * np.log(p[m] / q[m])))


def amax_entropy(hist, amax, levels=128, start=128):
    bins = np.array(hist, dtype=np.float64)
    bins[0] = bins[1]
    if bins.sum() <= 0 or len(bins) < levels:
        return float(amax)
    divs = []
    for i in range(start, len(bins) + 1):
        space = np.linspace(0, i, num=levels + 1)
        dig = np.digitize(np.arange(i), space) - 1
        dig[bins[:i] == 0] = -1
        keep = dig != -1
        cnt = np.zeros(levels)
        nz = np.zeros(levels)
        np.add.at(cnt, dig[keep], bins[:i][keep])
        np.add.at(nz, dig[keep], 1)
        q = np.zeros(i)
        q[keep] = cnt[dig[keep]] / nz[dig[keep]]
        p = bins[:i].copy()
        p[-1] += bins[i:].sum()
        divs.append(_kl(p, q))
    d = np.array(divs)
    if not np.isfinite(d).any():
        return float(amax)
    last = len(d) - 1 - int(np.argmin(d[::-1]))
    return float(amax) * (last + start) / len(bins)
