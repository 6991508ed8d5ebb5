"""Failure alerts: every failed run of the code location is sent to a webhook and/or by mail.

``failure_alert_sensor`` (a run failure sensor, on by default) hands each failed run to the
``alerts`` resource, which says what failed (job, partition, the steps' errors) with a link to
the run in the UI, to whatever is configured; with nothing configured it sends nothing. The
resource reads its settings from the environment of the code location (``AlertsResource.from_env``):

- ``MIND_HARVEST_ALERT_WEBHOOK_URL``: a JSON POST ``{"text": ..., "run_id", "job", "partition",
  "run_url", "errors"}`` (``text`` is what Slack, Mattermost and most chat webhooks show);
- ``MIND_HARVEST_ALERT_SMTP_HOST`` (``MIND_HARVEST_ALERT_SMTP_PORT``, default 25),
  ``MIND_HARVEST_ALERT_MAIL_FROM``, ``MIND_HARVEST_ALERT_MAIL_TO`` (comma-separated): one mail per
  failed run;
- ``MIND_HARVEST_DAGSTER_URL``: the UI's address in the run links (default http://127.0.0.1:3000).
"""

from __future__ import annotations

import os
import smtplib
from email.message import EmailMessage
from typing import Any

import dagster as dg
import httpx

WEBHOOK_ENV = "MIND_HARVEST_ALERT_WEBHOOK_URL"
SMTP_HOST_ENV = "MIND_HARVEST_ALERT_SMTP_HOST"
SMTP_PORT_ENV = "MIND_HARVEST_ALERT_SMTP_PORT"
MAIL_FROM_ENV = "MIND_HARVEST_ALERT_MAIL_FROM"
MAIL_TO_ENV = "MIND_HARVEST_ALERT_MAIL_TO"
UI_URL_ENV = "MIND_HARVEST_DAGSTER_URL"
DEFAULT_UI_URL = "http://127.0.0.1:3000"
SEND_TIMEOUT_S = 10.0


class AlertsResource(dg.ConfigurableResource):
    """Where failure alerts go: a webhook, mail through an SMTP server, both or neither."""

    webhook_url: str | None = None
    smtp_host: str | None = None
    smtp_port: int = 25
    mail_from: str = "mind-harvest@localhost"
    mail_to: list[str] = []
    ui_url: str = DEFAULT_UI_URL

    @classmethod
    def from_env(cls) -> AlertsResource:
        return cls(
            webhook_url=os.environ.get(WEBHOOK_ENV) or None,
            smtp_host=os.environ.get(SMTP_HOST_ENV) or None,
            smtp_port=int(os.environ.get(SMTP_PORT_ENV) or 25),
            mail_from=os.environ.get(MAIL_FROM_ENV) or "mind-harvest@localhost",
            mail_to=[a.strip() for a in (os.environ.get(MAIL_TO_ENV) or "").split(",") if a.strip()],
            ui_url=os.environ.get(UI_URL_ENV) or DEFAULT_UI_URL,
        )

    @property
    def configured(self) -> bool:
        return bool(self.webhook_url or (self.smtp_host and self.mail_to))

    def send(self, alert: dict[str, Any]) -> list[str]:
        """Send ``alert`` everywhere configured; returns where it went."""
        sent = []
        if self.webhook_url:
            httpx.post(self.webhook_url, json=alert, timeout=SEND_TIMEOUT_S).raise_for_status()
            sent.append("webhook")
        if self.smtp_host and self.mail_to:
            mail = EmailMessage()
            mail["Subject"] = alert["text"].splitlines()[0]
            mail["From"] = self.mail_from
            mail["To"] = ", ".join(self.mail_to)
            mail.set_content(alert["text"])
            with smtplib.SMTP(self.smtp_host, self.smtp_port, timeout=SEND_TIMEOUT_S) as smtp:
                smtp.send_message(mail)
            sent.append("mail")
        return sent


def failure_alert(run: dg.DagsterRun, errors: list[str], ui_url: str) -> dict[str, Any]:
    """What a failed run's alert says: job, partition, the steps' errors, the run's link."""
    partition = run.tags.get("dagster/partition")
    run_url = f"{ui_url.rstrip('/')}/runs/{run.run_id}"
    title = f"mind-harvest: {run.job_name} failed" + (f" for {partition}" if partition else "")
    lines = [title, *(f"- {error}" for error in errors), f"run {run.run_id}: {run_url}"]
    return {
        "text": "\n".join(lines),
        "run_id": run.run_id,
        "job": run.job_name,
        "partition": partition,
        "run_url": run_url,
        "errors": errors,
    }


def _step_errors(context: dg.RunFailureSensorContext) -> list[str]:
    errors = []
    for event in context.get_step_failure_events():
        failure = event.step_failure_data
        user = failure.user_failure_data
        message = user.description if user and user.description else (failure.error.message if failure.error else "")
        errors.append(f"{event.step_key}: {message.strip()}")
    return errors or [context.failure_event.message or "the run failed"]


@dg.run_failure_sensor(
    name="failure_alert_sensor",
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Sends each failed run (job, partition, errors, link) to the webhook and/or mail "
    "configured by MIND_HARVEST_ALERT_* (docs/dagster.md).",
)
def failure_alert_sensor(context: dg.RunFailureSensorContext, alerts: AlertsResource) -> None:
    if not alerts.configured:
        return
    alert = failure_alert(context.dagster_run, _step_errors(context), alerts.ui_url)
    sent = alerts.send(alert)
    context.log.info(f"run {context.dagster_run.run_id}: alert sent by {', '.join(sent)}")
