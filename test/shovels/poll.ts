/** Waits for a condition by polling, with a generous deadline (a loaded machine is slow). */
export async function poll<T>(
  value: () => T | Promise<T>,
  done: (v: T) => boolean,
  what: string,
): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const v = await value();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
