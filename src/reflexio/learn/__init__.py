"""Learning: turning published interactions into profiles and playbooks (no SQL, no HTTP).

Extractors read windows of turns and return ``Changes``; the job driver in ``windows`` applies
them exactly once, together with the bookmark that says how far learning has read.
"""
