"""A failed run reaches the people who should know: the failure sensor posts it to a real HTTP
server on loopback and mails it through a real SMTP conversation on loopback, with the job, the
partition, the located reason and the link to its own run; with nothing configured nothing is sent."""

import json
import socketserver
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import dagster as dg
import pytest
from mind_harvest.pipelines.alerts import AlertsResource, failure_alert_sensor

from tests.pipelines.harness import add_partitions, harvest, register


class _Webhook(BaseHTTPRequestHandler):
    received: list[dict] = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Webhook.received.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


class _Smtp(socketserver.StreamRequestHandler):
    """Just enough SMTP (RFC 5321) to accept one message."""

    received: list[str] = []

    def reply(self, line: str) -> None:
        self.wfile.write(f"{line}\r\n".encode())

    def handle(self):
        self.reply("220 loopback ready")
        while line := self.rfile.readline().decode():
            verb = line.strip().split(" ")[0].upper()
            if verb in ("EHLO", "HELO"):
                self.reply("250 loopback")
            elif verb == "DATA":
                self.reply("354 end with .")
                data = []
                while (text := self.rfile.readline().decode()) not in (".\r\n", ""):
                    data.append(text)
                _Smtp.received.append("".join(data))
                self.reply("250 queued")
            elif verb == "QUIT":
                self.reply("221 bye")
                return
            else:
                self.reply("250 ok")


@pytest.fixture
def servers():
    _Webhook.received, _Smtp.received = [], []
    webhook = HTTPServer(("127.0.0.1", 0), _Webhook)
    smtp = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Smtp)
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (webhook, smtp)]
    for thread in threads:
        thread.start()
    yield webhook.server_address[1], smtp.server_address[1]
    for server in (webhook, smtp):
        server.shutdown()
        server.server_close()


def evaluate(instance, result, alerts: AlertsResource) -> None:
    run = instance.get_run_by_id(result.run_id)
    (failure,) = [e for e in result.all_events if e.event_type == dg.DagsterEventType.RUN_FAILURE]
    context = dg.build_run_status_sensor_context(
        sensor_name=failure_alert_sensor.name,
        dagster_instance=instance,
        dagster_run=run,
        dagster_event=failure,
        resources={"alerts": alerts},
    )
    failure_alert_sensor(context.for_run_failure())


@pytest.mark.slow
def test_a_failed_run_is_posted_to_the_webhook_and_mailed(tmp_path, home, instance, resources, servers):
    web_port, smtp_port = servers
    broken = tmp_path / "e" / "conversations.json"
    broken.parent.mkdir()
    broken.write_text("{ this is not json")
    key = register(home, "alpha", "chatgpt", broken, "gpt")
    add_partitions(instance, key)
    result = harvest(instance, resources, key, raise_on_error=False)
    assert not result.success

    evaluate(instance, result, AlertsResource())  # nothing configured: nothing sent
    assert _Webhook.received == [] and _Smtp.received == []

    alerts = AlertsResource(
        webhook_url=f"http://127.0.0.1:{web_port}/hook",
        smtp_host="127.0.0.1",
        smtp_port=smtp_port,
        mail_to=["ops@example.org"],
        ui_url="http://dagster.example:3000/",
    )
    evaluate(instance, result, alerts)
    (posted,) = _Webhook.received
    assert posted["run_id"] == result.run_id and posted["partition"] == key
    assert posted["run_url"] == f"http://dagster.example:3000/runs/{result.run_id}"
    (error,) = posted["errors"]
    assert error.startswith("harvest_items: alpha/gpt: failed: every record failed")
    assert posted["text"].startswith(f"mind-harvest: {posted['job']} failed for alpha/gpt")
    (mail,) = _Smtp.received
    assert "To: ops@example.org" in mail and result.run_id in mail and "every record failed" in mail


def test_the_alerts_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("MIND_HARVEST_ALERT_WEBHOOK_URL", "http://127.0.0.1:9/hook")
    monkeypatch.setenv("MIND_HARVEST_ALERT_MAIL_TO", "a@example.org, b@example.org")
    monkeypatch.setenv("MIND_HARVEST_ALERT_SMTP_HOST", "mail.example.org")
    alerts = AlertsResource.from_env()
    assert alerts.configured and alerts.mail_to == ["a@example.org", "b@example.org"]
    assert alerts.smtp_port == 25 and alerts.ui_url == "http://127.0.0.1:3000"
    monkeypatch.delenv("MIND_HARVEST_ALERT_WEBHOOK_URL")
    monkeypatch.delenv("MIND_HARVEST_ALERT_SMTP_HOST")
    assert not AlertsResource.from_env().configured
