#!/usr/bin/python3
"""The nemesis's checker against histories with known faults: each kind of
violation is planted once and must be found, and a clean history (a
takeover, a handover and skewed clocks) must pass."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checker  # noqa: E402


def lines(conn, epoch, worker, seqs, t0, step=200):
    return [{"conn": conn, "seq": s, "worker": worker, "epoch": epoch,
             "written_at_ms": t0 + i * step} for i, s in enumerate(seqs)]


def clean():
    """a: w1 (epoch 1, clock 300 ms ahead) to seq 10, killed; w2 (epoch 2, clock
    200 ms behind) resumes at 8 (after the checkpoint at 7): replays 8-10.
    b: w2 epoch 1, handed over to w1 at seq 5 (epoch 2)."""
    w1 = {"name": "w1.1", "skew_ms": 300,
          "lines": lines("a", 1, "w1", range(1, 11), 10_300)
          + lines("b", 2, "w1", range(6, 12), 13_300)}
    w2 = {"name": "w2.1", "skew_ms": -200,
          "lines": lines("a", 2, "w2", range(8, 15), 14_800)
          + lines("b", 1, "w2", range(1, 6), 9_800)}
    return [w1, w2]


def kinds(violations):
    return sorted(v["kind"] for v in violations)


class CheckStreams(unittest.TestCase):
    def test_a_clean_history_passes(self):
        self.assertEqual(checker.check_streams(clean()), [])

    def test_an_old_epoch_writing_after_a_new_one_began_is_an_overlap(self):
        ws = clean()
        # w1's clock is 300 ms ahead: its line stamped 15,400 was written at
        # 15,100 true time, after w2's epoch 2 began (15,000 true).
        ws[0]["lines"].append({"conn": "a", "seq": 11, "worker": "w1", "epoch": 1,
                               "written_at_ms": 15_400})
        found = checker.check_streams(ws)
        self.assertEqual(kinds(found), ["overlap"])
        self.assertIn("100 ms after epoch 2", found[0]["what"])

    def test_skew_is_taken_out_before_judging_overlap(self):
        ws = clean()
        # Stamped 15,250 by a clock 300 ms ahead: 14,950 true, before 15,000.
        ws[0]["lines"].append({"conn": "a", "seq": 11, "worker": "w1", "epoch": 1,
                               "written_at_ms": 15_250})
        self.assertEqual(checker.check_streams(ws), [])

    def test_two_processes_under_one_epoch(self):
        ws = clean()
        ws.append({"name": "w3.1", "skew_ms": 0, "lines": lines("b", 2, "w3", [12], 20_000)})
        self.assertEqual(kinds(checker.check_streams(ws)), ["shared-epoch"])

    def test_a_sequence_number_nobody_wrote_is_a_gap(self):
        ws = clean()
        ws[1]["lines"] = [l for l in ws[1]["lines"] if not (l["conn"] == "b" and l["seq"] == 3)]
        found = checker.check_streams(ws)
        self.assertEqual(kinds(found), ["gap"])
        self.assertIn("b: 1 sequence numbers never written: 3", found[0]["what"])

    def test_a_writer_going_back_in_epoch_or_seq(self):
        ws = clean()
        ws[0]["lines"].append({"conn": "b", "seq": 12, "worker": "w1", "epoch": 1,
                               "written_at_ms": 30_000})
        ws[0]["lines"].append({"conn": "b", "seq": 12, "worker": "w1", "epoch": 1,
                               "written_at_ms": 30_100})
        self.assertIn("epoch-back", kinds(checker.check_streams(ws)))
        self.assertIn("seq-back", kinds(checker.check_streams(ws)))


class CheckStore(unittest.TestCase):
    def test_the_store_matches(self):
        conns = [{"id": "a", "epoch": 2, "last_seq": 14}, {"id": "b", "epoch": 3, "last_seq": 9}]
        self.assertEqual(checker.check_store(clean(), conns), [])

    def test_a_checkpoint_past_the_sinks_and_an_epoch_gone_back(self):
        conns = [{"id": "a", "epoch": 1, "last_seq": 14}, {"id": "b", "epoch": 2, "last_seq": 12}]
        self.assertEqual(kinds(checker.check_store(clean(), conns)), ["checkpoint", "epoch-back"])


class CheckStreaming(unittest.TestCase):
    def test_a_connection_silent_since_the_window_began(self):
        # a's last line: 14,800 - (-200) + 6 * 200 = 16,200 true; b's: 13,300 - 300 + 1,000.
        found = checker.check_streaming(clean(), ["a", "b", "c"], 15_000)
        self.assertEqual([v["what"].split(":")[0] for v in found], ["b", "c"])


class CheckMovies(unittest.TestCase):
    def test_stuck_movies_and_audits(self):
        movies = {"m1": "traced", "m2": "queued", "m3": "tracing failed", "m4": "deleting"}
        audits = {
            "m1": [{"event": "movie.tracing.started", "job_id": "j1"},
                   {"event": "movie.tracing.completed", "job_id": "j1"}],
            "m3": [{"event": "movie.tracing.started", "job_id": "j2"},
                   {"event": "movie.tracing.failed", "job_id": "j2"},
                   {"event": "movie.tracing.failed", "job_id": "j2"},
                   {"event": "movie.tracing.started", "job_id": "j3"}],
        }
        found = checker.check_movies(movies, audits)
        self.assertEqual(kinds(found), ["audit", "audit", "stuck", "stuck"])
        what = [v["what"] for v in found]
        self.assertIn("movie m2 left queued", what)
        self.assertIn("movie m4 left deleting", what)
        self.assertIn("movie m3 job j2: 1 start(s), 2 end(s)", what)
        self.assertIn("movie m3 job j3: 1 start(s), 0 end(s)", what)


class Recovery(unittest.TestCase):
    def test_the_longest_stall_across_the_fault(self):
        # Killed at 500 ms: the next line is the taker's, at 3,900.
        times = [0, 200, 400, 3900, 4100]
        self.assertEqual(checker.recovery_ms(times, 500, 500), 3400)
        # Cut off from 300 to 2,000 (a partition): it wrote until 400.
        self.assertEqual(checker.recovery_ms(times, 300, 2000), 3600)
        self.assertIsNone(checker.recovery_ms(times, 5000, 5000))
        self.assertEqual(checker.percentile([5, 1, 3, 2, 4], 50), 3)
        self.assertEqual(checker.percentile(list(range(1, 101)), 99), 99)


if __name__ == "__main__":
    unittest.main()
