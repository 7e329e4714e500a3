/**
 * Maintenance windows (ADR 0054) in words, as `kubectl edgeroll status` and the dashboard's set
 * page show them: one text for both.
 */
import type { MaintenanceStatus } from "../api/maintenance.ts";

type WindowGroup = MaintenanceStatus["groups"][number];

/** `closed, next opening …, lifted until … by …`. */
export function windowsHeadline(windows: MaintenanceStatus): string {
  return (windows.open ? "open" : "closed") +
    (windows.nextOpening ? `, next opening ${windows.nextOpening}` : "") +
    (windows.override
      ? `, lifted until ${windows.override.until} by ${windows.override.by ?? "?"}`
      : "");
}

/** A group as a column shows it: `domain (zone)`, or the zone. */
export const groupLabel = (g: WindowGroup) =>
  g.domain !== undefined ? `${g.domain} (${g.timeZone})` : g.timeZone;

/** A group's times that matter in its state: the cut-off, the close, the opening. */
export function groupTimes(g: WindowGroup): string[] {
  return [
    g.state === "Open" && g.cutoffAt ? `no new start after ${g.cutoffAt}` : "",
    g.closesAt && g.state !== "Closed" ? `closes ${g.closesAt}` : "",
    g.opensAt ? `opens ${g.opensAt}` : "",
  ].filter(Boolean);
}
