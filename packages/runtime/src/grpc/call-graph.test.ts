// The call graph the .proto options declare is the one the installation allows: the chart's NetworkPolicies read
// deploy/helm/mileage/call-graph.yaml (check-rendered.py checks the rendered policies against it), which must be
// exactly the graph derived here — a path either allows that no method's callers need, or one it misses, fails.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { callGraph, operatorCalls, PROCESSES, serverOf } from './call-graph';

const CHART_CALL_GRAPH = path.resolve(__dirname, '../../../../deploy/helm/mileage/call-graph.yaml');

test("the chart's call graph is the one the methods' callers declare", () => {
  const graph = callGraph();
  const expected = [
    ...PROCESSES.map((p) => `${p}: [${graph[p].join(', ')}]`),
    `operator: [${operatorCalls().join(', ')}]`,
  ];
  const written = readFileSync(CHART_CALL_GRAPH, 'utf8')
    .split('\n')
    .filter((line) => line.trim() && !line.startsWith('#'));
  assert.deepEqual(written, expected, `${CHART_CALL_GRAPH} should read:\n${expected.join('\n')}`);
});

test('the graph has the calls the platform makes of its own accord, and none of operator or seed', () => {
  const graph = callGraph();
  assert.deepEqual(graph.gateway, ['drives', 'groups', 'scim', 'users', 'webhooks']);
  assert.deepEqual(
    graph.users,
    ['drives', 'groups', 'webhooks'],
    'the export job (every owner’s part), the outbox relay of user events',
  );
  assert.deepEqual(graph.groups, []);
  assert.equal(serverOf('/mileage.users.v1.OrganizationsService/GetOrganization'), 'users');
  assert.throws(() => serverOf('/grpc.health.v1.Health/Check'), /no process serves/);
});

test("the operator's commands call the four owners of an organization's data, and nothing else", () => {
  assert.deepEqual(operatorCalls(), ['drives', 'groups', 'users', 'webhooks']);
});
