/* The cluster bootstrap's inner loops (benchlang/stats/_kernels.py): each computes exactly
 * what its numpy form there computes, integer for integer, only without the temporaries.
 * Compiled on first use into a shared library (benchlang/native.py) and called through
 * ctypes, which releases the GIL: blocks run on every core.
 *
 * Random draws: SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014): draw t of a stream keyed k is mix(k + (t + 1) * GOLDEN); a
 * bounded draw in [0, m) is floor(u * m / 2^64) (Lemire, "Fast random integer generation in
 * an interval", ACM TOMACS 29(1), 2019, without the rejection step: each outcome's probability
 * is off by less than m / 2^64). */

#include <stdint.h>
#include <string.h>

#define GOLDEN 0x9E3779B97F4A7C15ULL

typedef uint8_t lanes16 __attribute__((vector_size(16), aligned(1)));

static inline uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Row by row, each parent p drawn counts[r][p] times draws counts[r][p] * m[p] children
 * among its own m[p] (numbered from first[p]); out[r][child] counts how often each child is
 * drawn. Draws are taken from the stream in the order row, parent, draw. */
void draw_children(const int32_t *counts, int64_t rows, int64_t n_parent, const int64_t *first,
                   const int64_t *m, int64_t n_child, uint64_t key, int32_t *out) {
    uint64_t state = key;
    for (int64_t r = 0; r < rows; r++) {
        int32_t *row = out + r * n_child;
        const int32_t *drawn = counts + r * n_parent;
        memset(row, 0, (size_t)n_child * sizeof *row);
        for (int64_t p = 0; p < n_parent; p++) {
            const uint64_t width = (uint64_t)m[p];
            int32_t *children = row + first[p];
            for (uint64_t d = (uint64_t)drawn[p] * width; d; d--) {
                state += GOLDEN;
                children[(uint64_t)(((unsigned __int128)mix(state) * width) >> 64)]++;
            }
        }
    }
}

/* draw_children for the last level, also tallying each row's draws under q masks: masks
 * holds, for each child, vecs * 16 small counts (its value counts below each window, in each
 * group); sums[r][k] = sum over children of out[r][child] * masks[child][k]. The tallies are
 * kept in 8-bit lanes, added once a draw, and moved into sums every `every` draws, before any
 * lane can pass 255. */
#define MAX_VECS 8
void draw_tally(const int32_t *counts, int64_t rows, int64_t n_parent, const int64_t *first,
                const int64_t *m, int64_t n_child, uint64_t key, int32_t *out,
                const uint8_t *masks, int64_t vecs, int64_t every, int64_t *sums) {
    uint64_t state = key;
    const int64_t lanes = 16 * vecs;
    for (int64_t r = 0; r < rows; r++) {
        int32_t *row = out + r * n_child;
        const int32_t *drawn = counts + r * n_parent;
        int64_t *total = sums + r * lanes;
        memset(row, 0, (size_t)n_child * sizeof *row);
        memset(total, 0, (size_t)lanes * sizeof *total);
        for (int64_t p = 0; p < n_parent; p++) {
            const uint64_t width = (uint64_t)m[p];
            int32_t *children = row + first[p];
            const lanes16 *tally = (const lanes16 *)(masks + first[p] * lanes);
            for (uint64_t left = (uint64_t)drawn[p] * width; left;) {
                uint64_t n = left < (uint64_t)every ? left : (uint64_t)every;
                left -= n;
                lanes16 acc[MAX_VECS] = {{0}};
                for (; n; n--) {
                    state += GOLDEN;
                    const uint64_t c = (uint64_t)(((unsigned __int128)mix(state) * width) >> 64);
                    children[c]++;
                    if (vecs == 1)
                        acc[0] += tally[c];
                    else
                        for (int64_t v = 0; v < vecs; v++)
                            acc[v] += tally[c * vecs + v];
                }
                for (int64_t v = 0; v < vecs; v++)
                    for (int k = 0; k < 16; k++)
                        total[16 * v + k] += acc[v][k];
            }
        }
    }
}

/* For each row r and group g: starting from below[r][g], add the weights block[r][cols[i]] of
 * the group's window (cols[starts[g] .. starts[g] + widths[g])) one by one; lo counts the
 * cumulative weights below low[r][g], hi those at most high[r][g]. Cumulative weights never
 * decrease, so the walk stops at the first one above high. */
void window_crossings(const int32_t *block, int64_t rows, int64_t width, const int64_t *cols,
                      const int64_t *starts, const int64_t *widths, int64_t groups,
                      const int64_t *below, const int64_t *low, const int64_t *high,
                      int64_t *lo, int64_t *hi) {
    for (int64_t r = 0; r < rows; r++) {
        const int32_t *w = block + r * width;
        for (int64_t g = 0; g < groups; g++) {
            const int64_t at = r * groups + g, lower = low[at], upper = high[at];
            const int64_t *window = cols + starts[g];
            int64_t cum = below[at], n_lo = 0, n_hi = 0;
            for (int64_t i = 0; i < widths[g]; i++) {
                cum += w[window[i]];
                if (cum > upper)
                    break;
                n_lo += cum < lower;
                n_hi++;
            }
            lo[at] = n_lo;
            hi[at] = n_hi;
        }
    }
}
