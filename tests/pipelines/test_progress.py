from mind_harvest.pipelines.progress import progress_log


class Log:
    def __init__(self):
        self.lines = []

    def info(self, message):
        self.lines.append(message)


def test_progress_is_logged_when_done_and_otherwise_at_most_every_interval():
    log = Log()
    report = progress_log(log, "frames embedded", every_s=3600)
    for done in (512, 1024, 1500):
        report(done, 1500)
    report(2000, None)  # no total: only on the interval
    assert log.lines == ["frames embedded: 1,500 of 1,500"]
    every_call = progress_log(log, "messages read", every_s=0)
    every_call(1000, None)
    assert log.lines[-1] == "messages read: 1,000"
