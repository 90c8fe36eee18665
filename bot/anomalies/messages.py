"""The anomaly message the poll plans: an unusual day of a model's spend."""

from __future__ import annotations

from dataclasses import dataclass

from bot.anomalies.detect import Anomaly
from bot.budgets.messages import AlertContext


@dataclass(frozen=True)
class AnomalyAlertMessage:
    """An unusual day of a model's spend, for the model's channel."""

    anomaly: Anomaly
    context: AlertContext
