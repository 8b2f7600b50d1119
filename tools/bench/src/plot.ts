// docs/benchmarks.svg: throughput and p99 against concurrency, full path and bare server, one row per route.
// Hand-built SVG (no charting dependency): log2 concurrency on x, linear values from zero on y.

export interface SweepPoint {
  route: string;
  target: 'full' | 'bare';
  connections: number;
  requestsPerSecond: number;
  p99Ms: number;
}

const PANEL = { width: 400, height: 200, left: 60, right: 20, top: 30, bottom: 40 };
const COLOURS = { bare: '#4a7ab5', full: '#d9822b' };

function niceMax(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return ([1, 2, 2.5, 5, 10].find((m) => m * p >= v) ?? 10) * p;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** An SVG document of the bench's style: white page, bold title, then `body` (already SVG). */
function svgDocument(width: number, height: number, title: string, body: string): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">
<style>
.t{font-size:12px;font-weight:bold}.xa{font-size:10px;text-anchor:middle}.ya{font-size:10px;text-anchor:end}
.frame{fill:none;stroke:#888}.grid{stroke:#ddd}.line{fill:none;stroke-width:2}
</style>
<rect width="100%" height="100%" fill="white"/>
<text x="10" y="20" font-size="14" font-weight="bold">${esc(title)}</text>
${body}
</svg>
`;
}

/** A panel's title, frame and five horizontal grid lines with their values (0…max). */
function frame(
  title: string,
  box: { x: number; y: number; w: number; h: number },
  max: number,
  sy: (v: number) => number,
): string[] {
  const out = [
    `<text x="${box.x}" y="${box.y - PANEL.top + 18}" class="t">${esc(title)}</text>`,
    `<rect x="${box.x}" y="${box.y}" width="${box.w}" height="${box.h}" class="frame"/>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const v = (max / 4) * i;
    out.push(
      `<line x1="${box.x}" x2="${box.x + box.w}" y1="${sy(v)}" y2="${sy(v)}" class="grid"/>`,
      `<text x="${box.x - 6}" y="${sy(v) + 4}" class="ya">${Number(v.toPrecision(3))}</text>`,
    );
  }
  return out;
}

function panel(points: SweepPoint[], value: (p: SweepPoint) => number, title: string, x0: number, y0: number): string {
  const w = PANEL.width - PANEL.left - PANEL.right;
  const h = PANEL.height - PANEL.top - PANEL.bottom;
  const levels = [...new Set(points.map((p) => p.connections))].sort((a, b) => a - b);
  const lo = Math.log2(levels[0]!);
  const hi = Math.log2(levels[levels.length - 1]!);
  const max = niceMax(Math.max(...points.map(value)));
  const sx = (c: number) => x0 + PANEL.left + (hi === lo ? w / 2 : ((Math.log2(c) - lo) / (hi - lo)) * w);
  const sy = (v: number) => y0 + PANEL.top + h - (v / max) * h;
  const out = frame(title, { x: x0 + PANEL.left, y: y0 + PANEL.top, w, h }, max, sy);
  for (const c of levels) out.push(`<text x="${sx(c)}" y="${y0 + PANEL.top + h + 16}" class="xa">${c}</text>`);
  out.push(`<text x="${x0 + PANEL.left + w / 2}" y="${y0 + PANEL.height - 6}" class="xa">connections</text>`);
  for (const target of ['bare', 'full'] as const) {
    const series = points.filter((p) => p.target === target).sort((a, b) => a.connections - b.connections);
    if (!series.length) continue;
    const d = series.map((p, i) => `${i ? 'L' : 'M'}${sx(p.connections).toFixed(1)},${sy(value(p)).toFixed(1)}`);
    out.push(`<path d="${d.join(' ')}" stroke="${COLOURS[target]}" class="line"/>`);
    for (const p of series)
      out.push(
        `<circle cx="${sx(p.connections).toFixed(1)}" cy="${sy(value(p)).toFixed(1)}" r="3" fill="${COLOURS[target]}"><title>${target} c=${p.connections}: ${Number(value(p).toPrecision(4))}</title></circle>`,
      );
  }
  return out.join('\n');
}

export function renderPlot(points: SweepPoint[], caption: string): string {
  const routes = [...new Set(points.map((p) => p.route))];
  const width = PANEL.width * 2;
  const height = 60 + routes.length * PANEL.height;
  const body = routes.flatMap((route, i) => {
    const mine = points.filter((p) => p.route === route);
    const y = 50 + i * PANEL.height;
    return [
      panel(mine, (p) => p.requestsPerSecond, `${route}: requests/s`, 0, y),
      panel(mine, (p) => p.p99Ms, `${route}: p99 ms`, PANEL.width, y),
    ];
  });
  return svgDocument(
    width,
    height,
    'Full path vs bare node:http + pg, by concurrency',
    `<text x="10" y="38" font-size="11">${esc(caption)} — <tspan fill="${COLOURS.full}">■ full path</tspan>  <tspan fill="${COLOURS.bare}">■ bare</tspan></text>
${body.join('\n')}`,
  );
}

/** A soak's memory over time: RSS of every process (left) and V8 heap in use (right), one line per process. */
export function renderMemoryPlot(
  samples: { t: number; rssMb: Record<string, number>; heapMb: Record<string, number> }[],
  idle: { rssMb: Record<string, number>; heapMb: Record<string, number> },
  caption: string,
): string {
  const palette = ['#d9822b', '#4a7ab5', '#3d9a50', '#b5443f', '#8a5db5', '#6b6b6b', '#c2a000'];
  const names = Object.keys(idle.rssMb);
  const colour = (name: string) => palette[names.indexOf(name) % palette.length]!;
  const w = PANEL.width - PANEL.left - PANEL.right;
  const h = PANEL.height * 1.5 - PANEL.top - PANEL.bottom;
  const tMax = Math.max(1, ...samples.map((s) => s.t));
  const panelOf = (
    pick: (s: { rssMb: Record<string, number>; heapMb: Record<string, number> }) => Record<string, number>,
    title: string,
    x0: number,
  ) => {
    const max = niceMax(Math.max(...samples.flatMap((s) => Object.values(pick(s))), ...Object.values(pick(idle))));
    const sx = (t: number) => x0 + PANEL.left + (t / tMax) * w;
    const sy = (v: number) => 50 + PANEL.top + h - (v / max) * h;
    const out = frame(title, { x: x0 + PANEL.left, y: 50 + PANEL.top, w, h }, max, sy);
    for (let i = 0; i <= 4; i++) {
      const t = (tMax / 4) * i;
      out.push(`<text x="${sx(t)}" y="${50 + PANEL.top + h + 16}" class="xa">${Math.round(t)}</text>`);
    }
    out.push(
      `<text x="${x0 + PANEL.left + w / 2}" y="${50 + PANEL.height * 1.5 - 6}" class="xa">seconds of load</text>`,
    );
    for (const name of Object.keys(pick(idle))) {
      const series = samples.filter((s) => pick(s)[name] !== undefined);
      if (!series.length) continue;
      const d = series.map((s, i) => `${i ? 'L' : 'M'}${sx(s.t).toFixed(1)},${sy(pick(s)[name]!).toFixed(1)}`);
      out.push(
        `<line x1="${sx(0)}" x2="${sx(tMax)}" y1="${sy(pick(idle)[name]!).toFixed(1)}" y2="${sy(pick(idle)[name]!).toFixed(1)}" stroke="${colour(name)}" stroke-dasharray="3 3" stroke-width="1"/>`,
        `<path d="${d.join(' ')}" stroke="${colour(name)}" class="line"><title>${esc(name)}</title></path>`,
      );
    }
    return out.join('\n');
  };
  const width = PANEL.width * 2;
  const height = 50 + PANEL.height * 1.5 + 30;
  const legend = names.map((n, i) => `<tspan x="${10 + i * 110}" fill="${colour(n)}">■ ${esc(n)}</tspan>`).join('');
  return svgDocument(
    width,
    height,
    'Memory through the soak (dashed: idle, before any load)',
    `<text x="10" y="38" font-size="11">${esc(caption)}</text>
${panelOf((s) => s.rssMb, 'RSS MB', 0)}
${panelOf((s) => s.heapMb, 'V8 heap in use MB', PANEL.width)}
<text y="${height - 10}" font-size="11">${legend}</text>`,
  );
}
