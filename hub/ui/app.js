// The fleet page: polls the hub's fleet API with the token kept in this tab's sessionStorage.
// Every figure comes from the API; text is set with textContent only.

const POLL_MS = 2000;
const KEY = "fleet-ccm-api-token";
const $ = (id) => document.getElementById(id);

let selected = new URLSearchParams(location.hash.slice(1)).get("cluster");
let timer;

// A token handed over in the fragment (never sent to the server) is kept, then dropped from the URL.
(() => {
  const params = new URLSearchParams(location.hash.slice(1));
  const t = params.get("token");
  if (t) {
    sessionStorage.setItem(KEY, t);
    params.delete("token");
    const rest = params.toString();
    history.replaceState(null, "", location.pathname + location.search + (rest ? `#${rest}` : ""));
  }
})();

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {}))
    if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function badge(text, attr) {
  return el("span", { class: "badge", ...attr }, text);
}

function age(iso, now) {
  if (!iso) return "-";
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  return `${Math.round(s / 3600)}h`;
}

async function api(path) {
  const res = await fetch(path, { headers: { authorization: `Bearer ${sessionStorage.getItem(KEY)}` } });
  if (res.status === 401) {
    const err = new Error("the hub refused the token");
    err.unauthorized = true;
    throw err;
  }
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || `HTTP ${res.status}`);
  return body;
}

function showLogin(message) {
  clearTimeout(timer);
  sessionStorage.removeItem(KEY);
  $("main").hidden = true;
  $("forget").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
}

// The hub's own health first: with NATS down no cluster's figures move, whatever they say.
function renderHub(h, now) {
  $("hub").dataset.health = h.health;
  $("hub-health").textContent = h.health;
  $("hub-health").dataset.health = h.health;
  const nats = h.nats.connected
    ? `NATS connected for ${age(h.nats.since, now)}`
    : `NATS down for ${age(h.nats.since, now)}, ${h.nats.kept} results kept for delivery`;
  const grpc = h.grpc.listening
    ? `gRPC listening on ${h.grpc.listen}`
    : `gRPC not listening (${h.grpc.listen})`;
  const leases =
    h.leases === null ? "no replicas" : h.leases.ok ? "lease store reachable" : "lease store failing";
  $("hub-parts").textContent = `${nats} · ${grpc} · ${leases}`;
  $("hub-problems").replaceChildren(
    ...h.problems.map((p) => el("li", { "data-health": p.health }, p.message)),
  );
}

function renderGrid(fleet) {
  const grid = $("grid");
  grid.replaceChildren(
    ...fleet.clusters.map((c) => {
      const problem = c.problems[0];
      const tile = el(
        "button",
        {
          class: "tile",
          type: "button",
          "data-cluster": c.name,
          "data-health": c.health,
          "aria-current": c.name === selected ? "true" : "false",
          title: c.problems.map((p) => p.message).join("\n") || "healthy",
        },
        el("span", { class: "name" }, c.name),
        el(
          "span",
          { class: "figures" },
          `nodes ${c.nodes.initialized}/${c.nodes.total} · LBs ${c.services.ready}/${c.services.loadBalancers}`,
        ),
        el("span", { class: "problem", "data-health": problem?.health }, problem ? problem.message : ""),
      );
      tile.addEventListener("click", () => {
        selected = c.name;
        history.replaceState(null, "", `#cluster=${encodeURIComponent(c.name)}`);
        refresh();
      });
      return tile;
    }),
  );
}

function renderAccounts(fleet, now) {
  $("accounts").tBodies[0].replaceChildren(
    ...fleet.accounts.map((a) => {
      const pct = Math.min(100, Math.round(a.utilization * 100));
      const bar = el("span", { class: "bar", "data-health": a.health }, el("span", { style: undefined }));
      bar.firstChild.style.width = `${pct}%`;
      return el(
        "tr",
        { "data-account": a.name, "data-health": a.health },
        el("td", {}, a.name, el("br"), el("span", { class: "dim" }, `${a.provider} ${a.region}`)),
        el("td", {}, badge(a.health, { "data-health": a.health })),
        el(
          "td",
          { class: "rate" },
          bar,
          `${a.callsPerSecond.toFixed(1)} / ${a.rateLimit.perSecond} per s (${pct}%)`,
        ),
        el(
          "td",
          { class: "throttled" },
          `${a.throttled.recent}`,
          a.throttled.last ? ` (last ${age(a.throttled.last, now)} ago)` : "",
        ),
        el("td", {}, a.cache.listedAt ? age(a.cache.listedAt, now) : "not listed yet"),
        el("td", {}, a.clusters.length),
      );
    }),
  );
}

/** A table body's rows, or one row saying there are none. */
function fill(table, rows, none) {
  const cols = table.tHead.rows[0].cells.length;
  table.tBodies[0].replaceChildren(
    ...(rows.length > 0 ? rows : [el("tr", {}, el("td", { colspan: cols, class: "dim" }, none))]),
  );
}

function renderDetail(c, now) {
  $("detail").hidden = false;
  $("detail-name").textContent = c.name;
  $("detail-health").textContent = c.health;
  $("detail-health").dataset.health = c.health;
  const a = c.agent;
  $("detail-agent").textContent = a.connected
    ? `Agent connected for ${age(a.since, now)} · agent ${a.agentVersion}, Kubernetes ${a.kubernetesVersion} · last snapshot ${age(a.lastSnapshot, now)} ago · account ${c.account}`
    : `Agent ${a.since ? `disconnected for ${age(a.since, now)}` : "never connected"} · account ${c.account}`;
  $("detail-summary").textContent =
    `Nodes ${c.nodes.initialized}/${c.nodes.total} initialized, ${c.nodes.waiting} waiting, ${c.nodes.shutdown} shut down, ` +
    `${c.nodes.deletedByLifecycle} deleted by lifecycle, ${c.nodes.deletionsHeld} deletions held · ` +
    `load balancers ${c.services.ready}/${c.services.loadBalancers} ready, ${c.services.inProgress} in progress, ${c.services.failing} failing · ` +
    `routes ${c.routes.enabled ? `${c.routes.routed}/${c.routes.nodesWithPodCidrs}` : "off"} · ` +
    `patches in flight ${c.patches.inflight} (republished ${c.patches.republished}) · refused ${c.objects.refused}, held ${c.objects.held}`;
  $("detail-problems").replaceChildren(
    ...c.problems.map((p) => el("li", { "data-health": p.health }, p.message)),
  );
  const trouble = (s) => (s === "initialized" || s === "ready" ? 1 : 0);
  const nodes = [...c.nodeList].sort(
    (x, y) => trouble(x.state) - trouble(y.state) || x.name.localeCompare(y.name),
  );
  fill(
    $("nodes"),
    nodes.map((n) =>
      el(
        "tr",
        { "data-node": n.name, "data-state": n.state },
        el("td", {}, n.name),
        el("td", {}, badge(n.state, { "data-state": n.state })),
        el("td", {}, n.ready),
        el(
          "td",
          { class: "reason" },
          n.reason || "",
          n.message ? el("div", { class: "dim" }, n.message) : "",
        ),
        el("td", {}, n.since ? `${age(n.since, now)} ago` : ""),
      ),
    ),
    "No nodes reported.",
  );
  const lbs = [...c.loadBalancerList].sort((x, y) => trouble(x.state) - trouble(y.state));
  fill(
    $("lbs"),
    lbs.map((l) =>
      el(
        "tr",
        { "data-service": `${l.namespace}/${l.name}`, "data-state": l.state },
        el("td", {}, `${l.namespace}/${l.name}`),
        el("td", {}, badge(l.state, { "data-state": l.state })),
        el("td", { class: "ingress" }, l.ingress.join(", ") || "-"),
        el(
          "td",
          { class: "reason" },
          l.reason || "",
          l.state !== "ready" && l.message ? el("div", { class: "dim" }, l.message) : "",
        ),
      ),
    ),
    "No LoadBalancer Services.",
  );
}

async function refresh() {
  clearTimeout(timer);
  try {
    const fleet = await api("/api/v1/fleet");
    const now = Date.parse(fleet.generatedAt);
    $("login").hidden = true;
    $("main").hidden = false;
    $("forget").hidden = false;
    $("fleet-health").textContent = fleet.health;
    $("fleet-health").dataset.health = fleet.health;
    $("fleet-counts").textContent =
      `${fleet.counts.clusters} clusters · ${fleet.counts.unhealthy} unhealthy · ${fleet.counts.warning} warning`;
    if (!selected || !fleet.clusters.some((c) => c.name === selected))
      selected = fleet.clusters[0]?.name ?? null;
    renderHub(fleet.hub, now);
    renderGrid(fleet);
    renderAccounts(fleet, now);
    if (selected) renderDetail(await api(`/api/v1/clusters/${encodeURIComponent(selected)}`), now);
    else $("detail").hidden = true;
    $("updated").textContent = `updated ${new Date(now).toLocaleTimeString()}`;
    $("error").textContent = "";
    document.body.dataset.loaded = fleet.generatedAt;
  } catch (err) {
    if (err.unauthorized) return showLogin("The hub refused this token.");
    $("error").textContent = `Cannot update: ${err.message}`;
  }
  timer = setTimeout(refresh, POLL_MS);
}

$("login").addEventListener("submit", (e) => {
  e.preventDefault();
  sessionStorage.setItem(KEY, $("token").value.trim());
  $("token").value = "";
  refresh();
});
$("forget").addEventListener("click", () => showLogin(""));

if (sessionStorage.getItem(KEY)) refresh();
else showLogin("");
