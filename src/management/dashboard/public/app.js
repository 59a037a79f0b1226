// The dashboard: signs in, shows the page the address names (#/, #/queues, #/queues/{vhost}/
// {name}, #/connections) and refreshes it on an interval while the tab is visible.
import { ApiError, api, signedInUser, signIn, signOut, Unauthorized } from './api.js';
import { fill, problem } from './dom.js';
import { connectionsPage } from './pages/connections.js';
import { overviewPage, record } from './pages/overview.js';
import { queuePage } from './pages/queue.js';
import { queuesPage } from './pages/queues.js';

const INTERVAL = 'mqlite.dashboard.interval';
const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
const login = /** @type {HTMLFormElement} */ ($('login'));
const interval = /** @type {HTMLSelectElement} */ ($('interval'));

/** @typedef {{ title: string, nav: string, element: HTMLElement, refresh(): Promise<void>, destroy?(): void }} Page */
/** @type {Page | undefined} */
let page;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let timer;
let generation = 0;

/** @param {string} part of the address, as typed: malformed escapes are kept as they are */
function decoded(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** The page the address names. */
function route() {
  const [, first, ...rest] = location.hash.replace(/^#/, '').split('/').map(decoded);
  if (first === 'queues' && rest.length === 2) return queuePage(rest[0], rest[1]);
  if (first === 'queues') return queuesPage();
  if (first === 'connections') return connectionsPage();
  return overviewPage();
}

function show() {
  page?.destroy?.();
  page = route();
  document.title = `${page.title} · mqlite`;
  for (const link of document.querySelectorAll('#nav a'))
    link.classList.toggle('current', /** @type {HTMLElement} */ (link).dataset.page === page.nav);
  fill($('page'), page.element);
  void refresh();
}

/** Reads the overview (for the charts' history), then the page; then waits for the next turn. */
async function refresh() {
  clearTimeout(timer);
  const turn = ++generation;
  try {
    const overview = await api('/overview');
    record(overview);
    $('broker').textContent =
      `${overview.product_name ?? ''} ${overview.product_version ?? ''} · ${overview.cluster_name ?? ''}`;
    await page?.refresh();
    problem(null);
  } catch (error) {
    if (error instanceof Unauthorized)
      return signedOut('Sign in again: the broker refused the credentials.');
    problem(
      error instanceof ApiError
        ? `The broker answered ${error.message}`
        : `The broker did not answer: ${error}`,
    );
  }
  if (turn === generation && document.visibilityState === 'visible')
    timer = setTimeout(refresh, Number(interval.value) * 1000);
}

/** @param {string} why */
function signedOut(why) {
  clearTimeout(timer);
  signOut();
  page?.destroy?.();
  page = undefined;
  fill($('page'));
  $('nav').hidden = true;
  $('session').hidden = true;
  login.hidden = false;
  $('login-error').textContent = why;
  problem(null);
}

function signedIn() {
  login.hidden = true;
  $('nav').hidden = false;
  $('session').hidden = false;
  $('user').textContent = signedInUser() ?? '';
  show();
}

login.addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = new FormData(login);
  signIn(String(form.get('username')), String(form.get('password')));
  try {
    await api('/whoami');
    login.reset();
    signedIn();
  } catch (error) {
    signedOut(
      error instanceof Unauthorized
        ? 'Login failed.'
        : String(error instanceof Error ? error.message : error),
    );
  }
});
$('sign-out').addEventListener('click', () => signedOut(''));
interval.value = sessionStorage.getItem(INTERVAL) ?? interval.value;
interval.addEventListener('change', () => {
  sessionStorage.setItem(INTERVAL, interval.value);
  void refresh();
});
window.addEventListener('hashchange', () => page && show());
// A hidden tab asks nothing of the broker; back in view, it refreshes at once.
document.addEventListener('visibilitychange', () => {
  if (!page) return;
  if (document.visibilityState === 'visible') void refresh();
  else clearTimeout(timer);
});

if (signedInUser() === null) signedOut('');
else signedIn();
