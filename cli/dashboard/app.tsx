/** @jsxImportSource hono/jsx */
/**
 * The dashboard's pages (Hono, server-rendered JSX), its stream of changes (server-sent events)
 * and its actions (pause, resume, undo: the CLI's own functions). Served on loopback only; the
 * actions ask for the page's token and a same-origin request, so another site open in the same
 * browser cannot press them. Every asset is served here: nothing outside loopback is reached.
 */
import { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import { zValidator } from "@hono/zod-validator";
import { z } from "zod";
import type { FC, PropsWithChildren } from "hono/jsx";
import { ReconcileParams } from "../../routes/controller-api.ts";
import { rejectInvalid } from "../../routes/params.ts";
import { errorHandler, HttpError, notFound } from "../../routes/errors.ts";
import type { Logger } from "../../lib/log.ts";
import type { SetRef } from "../../api/set-ref.ts";
import { budgetText } from "../../api/plan.ts";
import type { MaintenanceStatus } from "../../api/maintenance.ts";
import { groupLabel, groupTimes, windowsHeadline } from "../maintenance-text.ts";
import { checkCounts, checkLabel } from "../analysis-text.ts";
import { planHeadline } from "../plan-text.ts";
import type { AnalysisStatus } from "../../api/analysis.ts";
import type { Fleet, SetSummary } from "./fleet.ts";
import { changedTiles, type SetView, tileStates } from "./tiles.ts";
import { dashboardCss, dashboardScript } from "./assets.ts";
import { chartSvg, RolloutHistory } from "../rollout-chart.ts";
import { plural } from "../../engine/conditions.ts";

export interface DashboardDeps {
  fleet: Fleet;
  logger: Logger;
  /** Runs a CLI action on a set; its sentence is shown on the page. */
  act(action: DashboardAction, ref: SetRef): Promise<string>;
  /** Asked for by every action (`x-edgeroll-dashboard`), written into each page. */
  token: string;
  /** Fewest milliseconds between two updates of a stream (default 500). */
  throttleMs?: number;
  /** A stream reads its set at least this often, for what no cache watches (default 5 s). */
  refreshMs?: number;
  /** Ends every stream (the server's graceful shutdown waits for open ones). */
  closing?: AbortSignal;
}

export const dashboardActions = ["pause", "resume", "undo", "approve", "promote", "abort"] as const;
export type DashboardAction = typeof dashboardActions[number];
/** The actions that answer a rollout plan: shown only on the page of a set that has one. */
const planActions: readonly DashboardAction[] = ["approve", "promote", "abort"];

const confirmations: Record<DashboardAction, string> = {
  pause: "Pause this rollout? No more old pods will be replaced.",
  resume: "Resume this rollout? A stop by the failure budget is acknowledged.",
  undo: "Roll back to the revision before the current one?",
  approve: "Approve the plan's current step? Once it is done, the next step starts.",
  promote: "Promote this rollout? Every remaining step runs, without pauses.",
  abort: "Abort this rollout? No more old pods will be replaced for this revision.",
};

const Page: FC<PropsWithChildren<{ title: string; token: string }>> = (
  { title, token, children },
) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="edgeroll-token" content={token} />
      <title>{title} · edgeroll</title>
      <link rel="stylesheet" href="/assets/dashboard.css" />
    </head>
    <body>
      <header>
        <a href="/">edgeroll</a> <span>{title}</span>
      </header>
      <main>{children}</main>
      <script src="/assets/dashboard.js"></script>
    </body>
  </html>
);

const setPath = (ref: SetRef) => `/sets/${ref.kind}/${ref.namespace}/${ref.name}`;

const SetList: FC<{ sets: SetSummary[] }> = ({ sets }) => (
  <table class="sets">
    <thead>
      <tr>
        <th>set</th>
        <th>updated</th>
        <th>unavailable</th>
        <th>conditions</th>
      </tr>
    </thead>
    <tbody>
      {sets.map((s) => (
        <tr key={s.key}>
          <td>
            <a href={setPath(s.ref)}>{s.key}</a>
          </td>
          <td>{s.updated}/{s.desired}</td>
          <td>{s.unavailable}</td>
          <td>{s.conditions.join(", ")}</td>
        </tr>
      ))}
    </tbody>
  </table>
);

/**
 * The plan's step and each domain's state and counts (ADR 0050), with the domain's course over
 * the time this page has watched it when `history` is given.
 */
const PlanSummary: FC<{ view: SetView; history?: RolloutHistory }> = ({ view, history }) => {
  const plan = view.plan!;
  const charts = new Map(history?.charts().map((c) => [c.domain.name, c]));
  return (
    <>
      <h3>Plan</h3>
      <p class="plan" data-plan-state={plan.state} data-plan-step={plan.step}>
        {planHeadline(plan)}
      </p>
      <ul class="domains">
        {plan.domains.map((d) => {
          const chart = charts.get(d.name);
          return (
            <li key={d.name} data-domain={d.name} data-domain-state={d.state}>
              <b>{d.name}</b> <span class={`state ${d.state}`}>{d.state}</span>{" "}
              {d.updated}/{d.nodes} updated
              {d.unreachable > 0 ? `, ${d.unreachable} unreachable` : ""}
              <Chart chart={chart} />
            </li>
          );
        })}
      </ul>
    </>
  );
};

/**
 * The maintenance windows the outdated nodes wait for (ADR 0054): open or closed, the next
 * opening, the override, and each group's state and times.
 */
const WindowsSummary: FC<{ windows: MaintenanceStatus }> = ({ windows }) => (
  <>
    <h3>Maintenance windows</h3>
    <p class="windows" data-windows-open={String(windows.open)}>{windowsHeadline(windows)}</p>
    <ul class="windows">
      {windows.groups.map((g) => {
        const name = groupLabel(g);
        return (
          <li key={name} data-window={name} data-window-state={g.state}>
            <b>{name}</b> <span class={`state ${g.state}`}>{g.state}</span>{" "}
            {plural(g.outdated, "node")} outdated
            {g.problem ? `: ${g.problem}` : ""}
            {groupTimes(g).map((t) => `, ${t}`).join("")}
          </li>
        );
      })}
      {windows.moreGroups ? <li>… and {windows.moreGroups} more groups</li> : ""}
    </ul>
  </>
);

/** The analysis checks (ADR 0055): each check's standing per domain, its counts and last value. */
const ChecksSummary: FC<{ analysis: AnalysisStatus }> = ({ analysis }) => (
  <>
    <h3>Analysis checks</h3>
    <ul class="checks">
      {analysis.checks.map((c) => {
        const label = checkLabel(c);
        return (
          <li key={label} data-check={label} data-check-phase={c.phase}>
            <b>{label}</b> <span class={`state ${c.phase}`}>{c.phase}</span> {checkCounts(c)}
          </li>
        );
      })}
    </ul>
  </>
);

/** One domain's course (`rollout-chart.ts` draws it), or nothing before the stream's first look. */
const Chart: FC<{ chart?: ReturnType<RolloutHistory["charts"]>[number] }> = ({ chart }) =>
  chart
    ? (
      <div
        class="chart"
        dangerouslySetInnerHTML={{ __html: chartSvg(chart.domain, chart.samples) }}
      >
      </div>
    )
    : "";

/**
 * The numbers, plan, conditions and events of a set: re-rendered whole on each update, with the
 * course the stream has seen (`history`) once there is one.
 */
export const Summary: FC<{ view: SetView; history?: RolloutHistory }> = ({ view, history }) => (
  <section id="summary">
    <p class="progress">
      <progress max={view.desired || 1} value={view.updated}></progress>{" "}
      <b data-field="updated">{view.updated}</b>/{view.desired} updated, {view.available} available,
      {" "}
      {view.unavailable} unavailable · budget: {view.budget ? budgetText(view.budget) : "none"}
      {view.paused ? " · paused" : ""}
      {view.revision ? ` · revision ${view.revision}` : ""}
    </p>
    {view.stopped ? <p class="stopped">Stopped: {view.stopped}</p> : ""}
    {view.plan ? <PlanSummary view={view} history={history} /> : ""}
    {view.maintenance ? <WindowsSummary windows={view.maintenance} /> : ""}
    {view.analysis ? <ChecksSummary analysis={view.analysis} /> : ""}
    {!view.plan && history ? <Chart chart={history.charts()[0]} /> : ""}
    <ul class="legend">
      {tileStates.map((s) => (
        <li key={s}>
          <span class={`tile ${s}`}></span> {s} <b data-count={s}>{view.counts[s]}</b>
        </li>
      ))}
    </ul>
    <h3>Conditions</h3>
    <ul class="conditions">
      {view.conditions.map((c) => (
        <li key={c.type} class={c.status === "True" ? "on" : "off"}>
          {c.type} {c.status}
          {c.reason ? ` (${c.reason})` : ""}
          {c.message ? `: ${c.message}` : ""}
        </li>
      ))}
    </ul>
    <h3>Events</h3>
    <ul class="events">
      {view.events.map((e, i) => <li key={i} class={e.type}>{e.at} {e.reason}: {e.message}</li>)}
    </ul>
  </section>
);

const SetPage: FC<{ view: SetView }> = ({ view }) => (
  <div data-stream={`${setPath(view.ref)}/stream`}>
    <nav class="actions">
      {dashboardActions.filter((a) =>
        view.plan || !planActions.includes(a)
      ).map((a) => (
        <button
          key={a}
          type="button"
          data-action={`${setPath(view.ref)}/${a}`}
          data-confirm={confirmations[a]}
        >
          {a}
        </button>
      ))}
      <span id="notice"></span>
    </nav>
    <div class="set">
      <div class="fleet">
        {view.groups.map(([group, tiles]) => (
          <section key={group} class="zone" data-group={group}>
            <h2>
              {group} <small>{tiles.length} nodes</small>
            </h2>
            <div class="tiles">
              {tiles.map((t) => (
                <span key={t.node} id={`n-${t.node}`} class={`tile ${t.state}`} title={t.title}>
                </span>
              ))}
            </div>
          </section>
        ))}
      </div>
      <Summary view={view} />
    </div>
  </div>
);

/** What one stream update carries: the tiles that changed, and the summary, rendered. */
export function updateMessage(
  before: SetView | undefined,
  after: SetView,
  history?: RolloutHistory,
) {
  return {
    tiles: changedTiles(before, after),
    summary: String(<Summary view={after} history={history} />),
  };
}

export function createDashboardApp(deps: DashboardDeps): Hono {
  const { fleet, logger } = deps;
  const throttleMs = deps.throttleMs ?? 500;
  const refreshMs = deps.refreshMs ?? 5_000;
  const app = new Hono();
  app.onError(errorHandler(logger));
  app.notFound(notFound(app));

  app.get(
    "/assets/dashboard.css",
    (c) => c.body(dashboardCss, 200, { "Content-Type": "text/css" }),
  );
  app.get(
    "/assets/dashboard.js",
    (c) => c.body(dashboardScript, 200, { "Content-Type": "text/javascript" }),
  );
  app.get("/", async (c) =>
    c.html(
      `<!DOCTYPE html>${(
        <Page title="sets" token={deps.token}>
          <SetList sets={await fleet.sets()} />
        </Page>
      )}`,
    ));

  const setRoute = "/sets/:kind/:namespace/:name";
  const params = zValidator("param", ReconcileParams, rejectInvalid);
  const viewOf = async (ref: SetRef) => {
    const view = await fleet.view(ref);
    if (!view) {
      throw new HttpError(404, "NotFound", `${ref.kind}/${ref.namespace}/${ref.name} not found`);
    }
    return view;
  };

  app.get(setRoute, params, async (c) => {
    const view = await viewOf(c.req.valid("param"));
    return c.html(
      `<!DOCTYPE html>${(
        <Page title={view.key} token={deps.token}>
          <SetPage view={view} />
        </Page>
      )}`,
    );
  });

  app.get(`${setRoute}/stream`, params, (c) => {
    const ref = c.req.valid("param");
    return streamSSE(c, async (stream) => {
      let dirty = true;
      let last: SetView | undefined;
      /** The summary `last` was rendered as: compared, not rendered again. */
      let lastSummary = "";
      let readAt = 0;
      // The course of the rollout since this page opened, drawn in its summary.
      const history = new RolloutHistory();
      const stop = fleet.onChange(() => dirty = true);
      stream.onAbort(stop);
      try {
        while (!stream.aborted && !deps.closing?.aborted) {
          if (dirty || Date.now() - readAt >= refreshMs) {
            dirty = false;
            readAt = Date.now();
            const view = await fleet.view(ref);
            if (!view) break;
            history.add(readAt, view.chart);
            const message = updateMessage(last, view, history);
            if (message.tiles.length > 0 || !last || message.summary !== lastSummary) {
              await stream.writeSSE({ event: "view", data: JSON.stringify(message) });
            }
            last = view;
            lastSummary = message.summary;
          }
          await stream.sleep(throttleMs);
        }
      } catch (err) {
        logger.warn("dashboard stream ended", { set: ref.name, error: (err as Error).message });
      } finally {
        stop();
      }
    });
  });

  // Actions: from a page of this dashboard (a browser sends Origin with every POST) that
  // carries its token.
  app.post(
    `${setRoute}/:action`,
    zValidator(
      "param",
      ReconcileParams.extend({ action: z.enum(dashboardActions) }),
      rejectInvalid,
    ),
    async (c) => {
      const origin = c.req.header("origin");
      if (origin !== new URL(c.req.url).origin) {
        throw new HttpError(
          403,
          "Forbidden",
          `actions are taken from this dashboard's pages, not from ${origin ?? "no page"}`,
        );
      }
      if (c.req.header("x-edgeroll-dashboard") !== deps.token) {
        throw new HttpError(403, "Forbidden", "the dashboard's token is missing or wrong");
      }
      const { action, ...ref } = c.req.valid("param");
      const message = await deps.act(action, ref);
      logger.info("dashboard action", { set: `${ref.namespace}/${ref.name}`, action, message });
      return c.json({ message });
    },
  );
  return app;
}
