// A time chart of the last minutes, drawn by uPlot (loaded by index.html as the global `uPlot`):
// one sample per refresh, the oldest dropped past the window.

/** How far back a chart looks, in seconds. */
export const WINDOW_SECONDS = 600;

/**
 * The samples behind a chart, kept while the page is open so a chart shows the minutes before it
 * was opened too.
 */
export class History {
  /** @param {number} seriesCount */
  constructor(seriesCount) {
    /** @type {number[][]} times (seconds), then one array per series */
    this.data = [[], ...Array.from({ length: seriesCount }, () => [])];
  }

  /**
   * @param {number} time in seconds
   * @param {number[]} values one per series
   */
  push(time, values) {
    const [times] = this.data;
    times.push(time);
    for (const [i, v] of values.entries()) this.data[i + 1].push(v);
    while (times.length > 0 && times[0] < time - WINDOW_SECONDS)
      for (const column of this.data) column.shift();
  }
}

/**
 * A chart of `history` in `container`, as wide as the container.
 * @param {HTMLElement} container
 * @param {History} history
 * @param {{ label: string, color: string }[]} series
 * @param {(v: number) => string} format a value as the legend shows it
 */
export function timeChart(container, history, series, format) {
  const plot = new globalThis.uPlot(
    {
      width: Math.max(container.clientWidth, 300),
      height: 220,
      scales: {
        // From the first sample to the last, at least a minute and at most the window.
        x: {
          time: true,
          range: (_u, min, max) => [Math.min(Math.max(min, max - WINDOW_SECONDS), max - 60), max],
        },
        y: { range: (_u, _min, max) => [0, Math.max(max, 1)] },
      },
      series: [
        {},
        ...series.map(({ label, color }) => ({
          label,
          stroke: color,
          width: 2,
          value: (_u, v) => (v === null || v === undefined ? '–' : format(v)),
        })),
      ],
      axes: [{}, { size: 64, values: (_u, ticks) => ticks.map(format) }],
      legend: { live: false },
    },
    history.data,
    container,
  );
  const resize = new ResizeObserver(() =>
    plot.setSize({ width: Math.max(container.clientWidth, 300), height: 220 }),
  );
  resize.observe(container);
  return {
    update: () => plot.setData(history.data),
    destroy: () => {
      resize.disconnect();
      plot.destroy();
    },
  };
}
