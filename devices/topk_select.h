/* devices/topk_select.h: the K largest of a row of (value, index) pairs in the order torch.topk
 * gives on CPU, one text compiled as C (cpu backends), as OpenCL C (embedded) and as CUDA C. */

/* ATen's CPU top-k (TopKImpl.h) sorts (value, index) pairs with a comparator on the value alone
 * (NaN largest): std::partial_sort when K * 64 <= n, else std::nth_element at K - 1 and then
 * std::sort of the first K - 1. Ties therefore come out in the order libstdc++'s algorithms
 * leave them, so this file follows their steps (heap select and sort_heap; introselect with a
 * median-of-three pivot, unguarded partition and a final insertion sort; introsort with the
 * 16-element insertion-sort threshold), written in the subset C11, OpenCL C 1.2 and CUDA C
 * share: no recursion (introsort's right halves go on a small stack of ranges instead, which
 * leaves the same result since the ranges are disjoint). Rows hold at most TOPK_MAX_EXPERTS. */
#ifndef TOPK_SELECT_H
#define TOPK_SELECT_H

#ifdef __OPENCL_VERSION__
#define TOPK_FN
#elif defined(__CUDACC__) || defined(__MUSACC__)
#include <math.h>
#define TOPK_FN static inline __device__
#else
#include <math.h>
#define TOPK_FN static inline
#endif

#define TOPK_MAX_EXPERTS 512 /* the row length the devices' private arrays hold */
#define TOPK_SORT_THRESHOLD 16 /* libstdc++'s _S_threshold */
#define TOPK_STACK 32          /* > 2 lg(TOPK_MAX_EXPERTS) + 1, the deepest range stack */

#ifndef TOPK_REAL
#define TOPK_REAL float /* the value type; the cpu64 backend defines it as double */
#endif

typedef struct {
    TOPK_REAL v;
    int i;
} topk_pair;

/* the comparator: a before b when a is NaN and b is not, or a is larger */
TOPK_FN int topk_before(topk_pair a, topk_pair b)
{
    return (isnan(a.v) && !isnan(b.v)) || a.v > b.v;
}

TOPK_FN void topk_swap(topk_pair *q, int a, int b)
{
    topk_pair t = q[a];
    q[a] = q[b];
    q[b] = t;
}

TOPK_FN int topk_lg(int n)
{
    int l = 0;
    while (n > 1) {
        n >>= 1;
        l++;
    }
    return l;
}

/* ---- heaps (stl_heap.h's __push_heap, __adjust_heap, __make_heap, __pop_heap) ---------- */

TOPK_FN void topk_push_heap(topk_pair *q, int hole, int top, topk_pair val)
{
    int parent = (hole - 1) / 2;
    while (hole > top && topk_before(q[parent], val)) {
        q[hole] = q[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    q[hole] = val;
}

TOPK_FN void topk_adjust_heap(topk_pair *q, int hole, int len, topk_pair val)
{
    int top = hole, child = hole;
    while (child < (len - 1) / 2) {
        child = 2 * (child + 1);
        if (topk_before(q[child], q[child - 1]))
            child--;
        q[hole] = q[child];
        hole = child;
    }
    if ((len & 1) == 0 && child == (len - 2) / 2) {
        child = 2 * (child + 1);
        q[hole] = q[child - 1];
        hole = child - 1;
    }
    topk_push_heap(q, hole, top, val);
}

TOPK_FN void topk_make_heap(topk_pair *q, int len)
{
    if (len < 2)
        return;
    for (int parent = (len - 2) / 2;; parent--) {
        topk_adjust_heap(q, parent, len, q[parent]);
        if (parent == 0)
            return;
    }
}

/* the heap q[0, len) gives its top to q[result] and takes q[result]'s old value */
TOPK_FN void topk_pop_heap(topk_pair *q, int len, int result)
{
    topk_pair val = q[result];
    q[result] = q[0];
    topk_adjust_heap(q, 0, len, val);
}

/* q[0, mid) ends as a heap of the mid first (comparator order) of q[0, n) */
TOPK_FN void topk_heap_select(topk_pair *q, int mid, int n)
{
    topk_make_heap(q, mid);
    for (int i = mid; i < n; i++)
        if (topk_before(q[i], q[0]))
            topk_pop_heap(q, mid, i);
}

/* std::partial_sort(q, q + mid, q + n) */
TOPK_FN void topk_partial_sort(topk_pair *q, int mid, int n)
{
    topk_heap_select(q, mid, n);
    for (int len = mid; len > 1; len--)
        topk_pop_heap(q, len - 1, len - 1);
}

/* ---- insertion sorts and the partition (stl_algo.h) --------------------------------------- */

TOPK_FN void topk_linear_insert(topk_pair *q, int last)
{
    topk_pair val = q[last];
    while (topk_before(val, q[last - 1])) {
        q[last] = q[last - 1];
        last--;
    }
    q[last] = val;
}

TOPK_FN void topk_insertion_sort(topk_pair *q, int first, int last)
{
    if (first == last)
        return;
    for (int i = first + 1; i < last; i++) {
        if (topk_before(q[i], q[first])) {
            topk_pair val = q[i];
            for (int j = i; j > first; j--)
                q[j] = q[j - 1];
            q[first] = val;
        } else {
            topk_linear_insert(q, i);
        }
    }
}

/* the median of q[a], q[b], q[c] swapped into q[r] */
TOPK_FN void topk_median_to_first(topk_pair *q, int r, int a, int b, int c)
{
    if (topk_before(q[a], q[b])) {
        if (topk_before(q[b], q[c]))
            topk_swap(q, r, b);
        else if (topk_before(q[a], q[c]))
            topk_swap(q, r, c);
        else
            topk_swap(q, r, a);
    } else if (topk_before(q[a], q[c])) {
        topk_swap(q, r, a);
    } else if (topk_before(q[b], q[c])) {
        topk_swap(q, r, c);
    } else {
        topk_swap(q, r, b);
    }
}

/* q[first, last) split around q[pivot] without bounds checks; the cut */
TOPK_FN int topk_unguarded_partition(topk_pair *q, int first, int last, int pivot)
{
    for (;;) {
        while (topk_before(q[first], q[pivot]))
            first++;
        last--;
        while (topk_before(q[pivot], q[last]))
            last--;
        if (!(first < last))
            return first;
        topk_swap(q, first, last);
        first++;
    }
}

TOPK_FN int topk_partition_pivot(topk_pair *q, int first, int last)
{
    int mid = first + (last - first) / 2;
    topk_median_to_first(q, first, first + 1, mid, last - 1);
    return topk_unguarded_partition(q, first + 1, last, first);
}

/* ---- std::nth_element and std::sort ---------------------------------------------------- */

/* q[nth] is what a full sort would put there, the ones before it come first */
TOPK_FN void topk_nth_element(topk_pair *q, int nth, int n)
{
    int first = 0, last = n, depth = 2 * topk_lg(n);
    if (n == 0 || nth == n)
        return;
    while (last - first > 3) {
        if (depth == 0) {
            topk_heap_select(q + first, nth + 1 - first, last - first);
            topk_swap(q, first, nth);
            return;
        }
        depth--;
        int cut = topk_partition_pivot(q, first, last);
        if (cut <= nth)
            first = cut;
        else
            last = cut;
    }
    topk_insertion_sort(q, first, last);
}

/* introsort's loop: ranges longer than the threshold partitioned (or heap-sorted when the
 * depth runs out); the left parts wait on a stack */
TOPK_FN void topk_introsort_loop(topk_pair *q, int n)
{
    int lo[TOPK_STACK], hi[TOPK_STACK], dep[TOPK_STACK], top = 0;
    lo[0] = 0;
    hi[0] = n;
    dep[0] = 2 * topk_lg(n);
    top = 1;
    while (top > 0) {
        top--;
        int first = lo[top], last = hi[top], depth = dep[top];
        while (last - first > TOPK_SORT_THRESHOLD) {
            if (depth == 0) {
                topk_partial_sort(q + first, last - first, last - first);
                break;
            }
            depth--;
            int cut = topk_partition_pivot(q, first, last);
            lo[top] = first;
            hi[top] = cut;
            dep[top] = depth;
            top++;
            first = cut;
        }
    }
}

TOPK_FN void topk_sort(topk_pair *q, int n)
{
    if (n == 0)
        return;
    topk_introsort_loop(q, n);
    if (n > TOPK_SORT_THRESHOLD) {
        topk_insertion_sort(q, 0, TOPK_SORT_THRESHOLD);
        for (int i = TOPK_SORT_THRESHOLD; i < n; i++)
            topk_linear_insert(q, i);
    } else {
        topk_insertion_sort(q, 0, n);
    }
}

/* q[0, K) becomes torch.topk(values, K)'s pairs in its order (largest first), 1 <= K <= n */
TOPK_FN void topk_select(topk_pair *q, int n, int K)
{
    if ((long)K * 64 <= (long)n) {
        topk_partial_sort(q, K, n);
    } else {
        topk_nth_element(q, K - 1, n);
        topk_sort(q, K - 1);
    }
}

#endif
