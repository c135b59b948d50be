#!/usr/bin/env python3
"""sim: the deterministic backward's group played on the SMs, as README.md models it.

    python3 bench/experiments/13_det_writer/sim.py [--T 2.56] [--A 0.6] [--C 1.5] [--L 0.4] ...

Blocks launch in index order on the first SM to free up; block r of a head walks query tiles
r, r + 1, ... (wrapping), one visit a step. A block's consumers fill a staging every T µs but
need the previous visit's staging back first; its writer, per visit, waits for the staging,
then (deterministic) for its turn: the pass of the visitor before it in det2_turn's order, seen
L µs after it is made, plus the acquire's own A µs; then the adds, read back R µs after the
turn, complete and passed C µs after it. `pref`: the counter read during the visit before, so the
acquire's A µs is spent only when the turn comes late. `rev`: a group's blocks launched last key
tile first. (`late` moves only when the staging comes back, which this model does not feel.) Times are µs; the result, each kind's time
over the default's. A model with guessed latencies, not a measurement: it says whether the
launch order can cost what the deterministic kernel costs, not what it costs.
"""
import argparse
import heapq


def play(heads, n_kt, n_qt, sms, T, A, R, C, L, det, late=False, rev=False, pref=False):
    G = min(n_kt, n_qt, sms)
    assert n_kt == G, "one group a head here"
    blocks = [(b // n_kt, b % n_kt) for b in range(heads * n_kt)]
    if rev:
        blocks = [(h, G - 1 - r) for h, r in blocks]
    passed = {}            # (h, qt, r) -> the time the visit passed its turn
    waiters = {}           # (h, qt, r) -> blocks waiting on it
    state = {}             # block -> [step, f, e, w_free]
    free = [(0.0, s) for s in range(sms)]   # (time the SM is free, sm)
    heapq.heapify(free)
    nxt, done, end = 0, 0, 0.0

    def pred(h, qt, r):   # the visitor before r at query tile qt (det2_turn's order), or None
        if qt >= G - 1:
            return (h, qt, r + 1) if r < G - 1 else None
        if r == qt:
            return None
        return (h, qt, 0 if r == G - 1 else r + 1)

    def advance(blk):
        nonlocal done, end
        h, r = blk
        st = state[blk]
        while st[0] < n_qt:
            s, f_prev, e_prev, w_free = st
            qt = (r + s) % n_qt
            p = pred(h, qt, r) if det else None
            if p is not None and p not in passed:
                waiters.setdefault(p, []).append(blk)
                return
            f = max(f_prev + T, e_prev)                 # the staging full
            t0 = max(f, w_free)
            if det:
                seen = passed[p] + L if p else 0.0
                # pref: the counter was read during the last visit's adds; if the turn was
                # there by then, no round trip now
                t_turn = max(t0, seen + A) if pref else max(t0, seen) + A
                pt = t_turn + C
                e = pt if late else t_turn + R
                w_free = pt
                passed[(h, qt, r)] = pt
                ready.extend(waiters.pop((h, qt, r), []))
            else:
                e = t0 + R
                w_free = e
            st[:] = [s + 1, f, e, w_free]
        if st[0] == n_qt and len(st) == 4:
            st.append("done")
            fin = st[3] + (0.0 if det else C - R)
            end = max(end, fin)
            done += 1
            heapq.heappush(free, (fin, st_sm[blk]))

    st_sm = {}
    ready = []
    while nxt < len(blocks):
        if not free:   # every SM holds a block that waits on one not started
            raise RuntimeError("no SM frees up: a deadlock in the model")
        t, sm = heapq.heappop(free)
        blk = blocks[nxt]
        nxt += 1
        st_sm[blk] = sm
        state[blk] = [0, t, t, t]
        ready.append(blk)
        while ready:
            advance(ready.pop())
    assert done == len(blocks), (done, len(blocks))
    return end


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--n_kt", type=int, default=128)
    ap.add_argument("--n_qt", type=int, default=205)
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--T", type=float, default=2.56)
    ap.add_argument("--A", type=float, default=0.6)
    ap.add_argument("--R", type=float, default=0.5)
    ap.add_argument("--C", type=float, default=1.5)
    ap.add_argument("--L", type=float, default=0.4)
    a = ap.parse_args()
    args = (a.heads, a.n_kt, a.n_qt, a.sms, a.T, a.A, a.R, a.C, a.L)
    base = play(*args, det=False)
    print(f"T {a.T} A {a.A} R {a.R} C {a.C} L {a.L}: default {base / 1000:.2f} ms")
    for name, kw in [("det", {}), ("pref", {"pref": True}), ("rev", {"rev": True}),
                     ("pr", {"pref": True, "rev": True})]:
        t = play(*args, det=True, **kw)
        print(f"  {name:5s} {t / 1000:.2f} ms, {t / base:.3f}x the default")


if __name__ == "__main__":
    main()
