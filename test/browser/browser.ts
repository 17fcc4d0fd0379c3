// Browser harness for dashboard tests: Debian's Chromium driven by playwright-core (one launch per
// file, fresh profile), sign-in, axe-core WCAG 2.1 AA checks and screenshots into docs/screenshots/.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
const AXE = path.resolve('node_modules/axe-core/axe.min.js');
export const SHOTS = path.resolve('docs/screenshots');

export const launch = (): Promise<Browser> => chromium.launch({ executablePath: CHROMIUM, args: ARGS });

/** A fresh context (own cookies) on a laptop-sized viewport; bypassCSP lets the test inject axe. */
export const newContext = (b: Browser, viewport = { width: 1280, height: 800 }): Promise<BrowserContext> =>
  b.newContext({ viewport, bypassCSP: true, reducedMotion: 'reduce' });

export async function signIn(page: Page, base: string, key: string): Promise<void> {
  await page.goto(`${base}/dashboard`);
  await page.locator('#key').fill(key);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL(/\/dashboard\/emails/);
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/** Runs axe-core with the WCAG 2.1 A/AA rules (and best practices) and returns serious or critical violations. */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.addScriptTag({ path: AXE });
  const result = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as { axe: { run(ctx: unknown, opts: unknown): Promise<{ violations: AxeViolation[] }> } }
    ).axe;
    return axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
    });
  });
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 3).map((n) => ({ target: n.target })),
    }));
}

/**
 * Screenshots go to docs/screenshots/ when UPDATE_SCREENSHOTS=1 or the file is missing (so a plain
 * `npm test` leaves the committed images alone); otherwise to a temp folder.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  const committed = path.join(SHOTS, `${name}.png`);
  const update = process.env.UPDATE_SCREENSHOTS === '1' || !fs.existsSync(committed);
  const dir = update ? SHOTS : path.join(os.tmpdir(), 'mta-dashboard-shots');
  fs.mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: true });
}
