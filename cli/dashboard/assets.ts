/**
 * The dashboard's only client code and style, served by the app itself (no CDN: nothing outside
 * loopback is reached). The script follows the set's stream: each update sets the class of the
 * tiles that changed and replaces the summary; the action buttons ask before they post.
 */

export const dashboardCss = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #222; }
header { background: #1d2b3a; color: #fff; padding: 8px 16px; }
header a { color: #fff; font-weight: bold; margin-right: 12px; text-decoration: none; }
main { padding: 12px 16px; }
table.sets { border-collapse: collapse; }
table.sets td, table.sets th { border-bottom: 1px solid #ddd; padding: 4px 12px; text-align: left; }
.set { display: grid; grid-template-columns: minmax(0, 1fr) 420px; gap: 24px; align-items: start; }
#summary { border-left: 1px solid #ddd; padding-left: 16px; }
#summary h3 { font-size: 14px; margin: 12px 0 4px; }
#summary ul { padding-left: 18px; margin: 0; }
.tiles { display: flex; flex-wrap: wrap; gap: 2px; }
.tile { display: inline-block; width: 10px; height: 10px; border-radius: 2px; background: #ccc; }
.tile.updated { background: #2e9e4f; }
.tile.updating { background: #f0b429; }
.tile.old { background: #8fa3b8; }
.tile.held { background: #c9d3de; outline: 1px dashed #8fa3b8; }
.tile.unavailable { background: #e07b39; }
.tile.cut-off { background: #222; }
.tile.failed { background: #d64545; }
.legend { list-style: none; padding: 0; display: flex; gap: 14px; flex-wrap: wrap; }
.zone h2 { font-size: 14px; margin: 14px 0 6px; }
.stopped { color: #d64545; font-weight: bold; }
.conditions li.off { color: #888; }
.events li.Warning { color: #b03030; }
.actions button { margin-right: 8px; }
.domains { list-style: none; padding-left: 0 !important; }
.domains li { margin-bottom: 6px; }
.state { border-radius: 3px; padding: 0 4px; background: #eee; font-size: 12px; }
.state.Done { background: #cfe9d6; }
.state.Rolling { background: #fbe3a6; }
.state.AwaitingApproval, .state.Soaking { background: #d6e4f5; }
.state.Stopped { background: #f3c4c4; }
svg.chart { display: block; background: #fafafa; border: 1px solid #eee; margin-top: 2px; }
svg.chart path { fill: none; stroke-width: 1.5; }
svg.chart path.updated { stroke: #2e9e4f; }
svg.chart path.unavailable { stroke: #e07b39; }
svg.chart path.budget { stroke: #d64545; stroke-dasharray: 4 3; stroke-width: 1; }
#notice { margin-left: 8px; }
`;

export const dashboardScript = `
(() => {
  const token = document.querySelector('meta[name="edgeroll-token"]').content;
  const root = document.querySelector("[data-stream]");
  let updates = 0;
  if (root) {
    const source = new EventSource(root.dataset.stream);
    source.addEventListener("view", (event) => {
      const message = JSON.parse(event.data);
      for (const [node, state] of message.tiles) {
        const tile = document.getElementById("n-" + node);
        if (tile) tile.className = "tile " + state;
      }
      const summary = document.getElementById("summary");
      if (summary && message.summary) summary.outerHTML = message.summary;
      document.body.dataset.updates = String(++updates);
      document.body.dataset.updatedAt = String(Date.now());
    });
  }
  for (const button of document.querySelectorAll("button[data-action]")) {
    button.addEventListener("click", async () => {
      if (!confirm(button.dataset.confirm)) return;
      const res = await fetch(button.dataset.action, {
        method: "POST",
        headers: { "x-edgeroll-dashboard": token },
      });
      const body = await res.json();
      document.getElementById("notice").textContent = body.message ?? body.error.message;
    });
  }
})();
`;
