/**
 * Every PromQL query of the Grafana dashboard (driver/charts/nodefleet-karpenter/dashboards/nodefleet.json)
 * names only metrics the code exports: the scaling API's as its /metrics serves them (scraped from a
 * test server here), the driver's as driver/cmd/controller/testdata/exported-metrics.txt lists them
 * (written from the driver's registry after exercising it; the Go test that does so fails when the
 * list is stale). Queries are parsed with Prometheus' own PromQL grammar (@prometheus-io/lezer-promql).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { parser } from "@prometheus-io/lezer-promql";
import { projectRoot } from "../../../automation/stackConfigFile";
import { startTestApi } from "../../support/apiHarness";

/** A node of the parsed query (lezer's SyntaxNode, named through the parser so no other package is imported). */
type SyntaxNode = ReturnType<typeof parser.parse>["topNode"];

const DASHBOARD = path.join(projectRoot(), "driver/charts/nodefleet-karpenter/dashboards/nodefleet.json");
const DRIVER_METRICS = path.join(projectRoot(), "driver/cmd/controller/testdata/exported-metrics.txt");

/** Grafana's interval variables, which are not PromQL: replaced by a duration before parsing. */
const GRAFANA_DURATIONS = /\$(__rate_interval|__interval|__range)\b|\$\{(__rate_interval|__interval|__range)\}/g;

interface Query {
  readonly where: string;
  readonly expr: string;
}

interface DashboardPanel {
  readonly title?: string;
  readonly targets?: readonly { readonly expr?: string; readonly refId?: string }[];
  readonly panels?: readonly DashboardPanel[];
}

/** Every target expression of every panel, rows' nested panels included. */
function queriesOf(panels: readonly DashboardPanel[]): Query[] {
  return panels.flatMap((panel) => [
    ...(panel.targets ?? [])
      .filter((target) => target.expr !== undefined)
      .map((target) => ({ where: `panel "${panel.title}" ${target.refId}`, expr: target.expr! })),
    ...queriesOf(panel.panels ?? []),
  ]);
}

/** The metric names a query selects, or the problems found parsing it. */
function selectedMetrics(expr: string): { readonly names: string[]; readonly problems: string[] } {
  const promql = expr.replace(GRAFANA_DURATIONS, "5m");
  const names: string[] = [];
  const problems: string[] = [];
  parser.parse(promql).iterate({
    enter(node) {
      if (node.type.isError) problems.push(`syntax error at ${node.from}: "${promql.slice(Math.max(0, node.from - 10), node.to + 10)}"`);
      if (node.name !== "VectorSelector") return;
      const name = metricNameOf(node.node, promql);
      if (name === undefined) problems.push(`"${promql.slice(node.from, node.to)}" selects no metric by name`);
      else names.push(name);
    },
  });
  return { names, problems };
}

/** A selector's metric name: its identifier, or an exact __name__ matcher. */
function metricNameOf(selector: SyntaxNode, promql: string): string | undefined {
  const identifier = selector.getChild("Identifier");
  if (identifier) return promql.slice(identifier.from, identifier.to);
  const exact = /__name__\s*=\s*"([^"]+)"/.exec(promql.slice(selector.from, selector.to));
  return exact?.[1];
}

/** The series names an exposition serves: each TYPE line's family, histograms and summaries as their series. */
function seriesNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const line of exposition.split("\n")) {
    const typed = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (!typed) continue;
    const [, name, type] = typed;
    if (type === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) names.add(name + suffix);
    else if (type === "summary") for (const suffix of ["", "_sum", "_count"]) names.add(name + suffix);
    else names.add(name);
  }
  return names;
}

describe("the Grafana dashboard", () => {
  const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, "utf8")) as {
    panels: DashboardPanel[];
    templating: { list: { name: string; type: string; query?: string | { query?: string } }[] };
  };
  const queries = queriesOf(dashboard.panels);
  const driverMetrics = new Set(fs.readFileSync(DRIVER_METRICS, "utf8").split("\n").filter(Boolean));
  let apiMetrics: Set<string>;

  before(async () => {
    const api = await startTestApi();
    try {
      const response = await api.client.raw("GET", "/metrics");
      assert.equal(response.status, 200);
      apiMetrics = seriesNames(String(response.body));
    } finally {
      await api.close();
    }
  });

  it("parses as PromQL, every selector naming a metric the API serves or the driver registers", () => {
    assert.ok(queries.length >= 10, `only ${queries.length} queries found: is the dashboard's layout what queriesOf reads?`);
    const problems: string[] = [];
    for (const query of queries) {
      const selected = selectedMetrics(query.expr);
      problems.push(...selected.problems.map((problem) => `${query.where}: ${problem}`));
      if (selected.names.length === 0) problems.push(`${query.where}: selects no metric`);
      for (const name of selected.names) {
        if (!apiMetrics.has(name) && !driverMetrics.has(name))
          problems.push(`${query.where}: ${name} is neither served by the API nor registered by the driver`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it("finds a misspelt metric and a syntax error (the check itself)", () => {
    assert.deepEqual(selectedMetrics('sum(rate(nodefleet_driver_api_requests_totl{job="x"}[$__rate_interval]))').names, [
      "nodefleet_driver_api_requests_totl",
    ]);
    assert.ok(!driverMetrics.has("nodefleet_driver_api_requests_totl"));
    assert.notDeepEqual(selectedMetrics("sum(rate(up[5m])").problems, []);
    assert.deepEqual(selectedMetrics('{__name__="nodefleet_nodes"}').names, ["nodefleet_nodes"]);
    assert.match(selectedMetrics('{job="x"}').problems.join(), /selects no metric by name/);
  });

  it("charts every metric family the driver exports and the API's product metrics", () => {
    const used = new Set(queries.flatMap((query) => selectedMetrics(query.expr).names));
    const family = (name: string) => name.replace(/_(bucket|sum|count)$/, "");
    const usedFamilies = new Set([...used].map(family));
    // The disabled summary of fastify-metrics is registered nowhere (automation/api/server.ts), so nothing is left to skip.
    assert.ok(!apiMetrics.has("nodefleet_http_request_summary_seconds_count"), "the never-observed summary is not served");
    const expected = [...driverMetrics, ...[...apiMetrics].filter((name) => name.startsWith("nodefleet_"))].map(family);
    assert.deepEqual([...new Set(expected)].filter((name) => !usedFamilies.has(name)).sort(), []);
  });

  it("reads its variables from metrics the API serves", () => {
    for (const variable of dashboard.templating.list.filter((entry) => entry.type === "query")) {
      const query = typeof variable.query === "string" ? variable.query : (variable.query?.query ?? "");
      const labelValues = /^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)$/.exec(query);
      assert.ok(labelValues, `variable ${variable.name}: ${query} is not label_values(metric, label)`);
      assert.ok(
        apiMetrics.has(labelValues[1]) || driverMetrics.has(labelValues[1]),
        `variable ${variable.name}: ${labelValues[1]} is not exported`,
      );
    }
  });
});
