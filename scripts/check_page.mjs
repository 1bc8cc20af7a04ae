// Opens one HTML page in headless Chromium (playwright-core) and checks it as a person would
// see it: it loads with no console error, no uncaught exception and no failed or outside
// request; every inline <svg> plot has drawn line geometry and no text drawn over other text;
// a screenshot of the whole page can be taken. Run through scripts/check-page, which installs Chromium and playwright-core first.
//
//   node scripts/check_page.mjs --browser-dir DIR --chromium BIN --screenshot OUT.png
//        [--min-plots N] [--force] [--timeout S] PAGE.html
//
// Exit status: 0 all checks pass, 1 a check failed (one line per problem), 2 usage error or
// the browser could not be started.
import { createRequire } from 'node:module';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const NAME = 'check-page';
const die = (msg, code = 2) => {
    console.error(`${NAME}: error: ${msg}`);
    process.exit(code);
};

// ---- arguments
const opt = { minPlots: 1, force: false, timeoutS: 60, settleMs: 250 };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => (i + 1 < argv.length ? argv[++i] : die(`${a} needs a value`));
    if (a === '--browser-dir') opt.browserDir = val();
    else if (a === '--chromium') opt.chromium = val();
    else if (a === '--screenshot') opt.screenshot = val();
    else if (a === '--min-plots') opt.minPlots = Number(val());
    else if (a === '--timeout') opt.timeoutS = Number(val());
    else if (a === '--force') opt.force = true;
    else if (a.startsWith('-')) die(`unknown option ${a}`);
    else if (opt.page === undefined) opt.page = a;
    else die(`one page at a time (got ${opt.page} and ${a})`);
}
if (!opt.page) die('no page given');
if (!opt.browserDir || !opt.chromium || !opt.screenshot) die('--browser-dir, --chromium and --screenshot are required (use scripts/check-page)');
if (!Number.isInteger(opt.minPlots) || opt.minPlots < 0) die('--min-plots: a whole number ≥ 0');
if (!(opt.timeoutS > 0)) die('--timeout: seconds > 0');
if (!existsSync(opt.page) || !statSync(opt.page).isFile()) die(`no such page: ${opt.page}`);
if (existsSync(opt.screenshot) && !opt.force) die(`${opt.screenshot} exists: not overwritten (--force to replace it)`);

const require = createRequire(join(resolve(opt.browserDir), 'package.json'));
let chromium;
try {
    ({ chromium } = require('playwright-core'));
} catch (e) {
    die(`playwright-core not found under ${opt.browserDir}: ${e.message.split('\n')[0]}`);
}

// ---- the check
const started = Date.now();
const problems = [];
const warnings = [];
const problem = (s) => problems.push(s.replace(/\s+/g, ' ').trim());
const where = (loc) => (loc && loc.url ? ` (${basename(loc.url)}:${loc.lineNumber + 1}:${loc.columnNumber + 1})` : '');

// a hard stop in case the browser hangs past every Playwright timeout
const watchdog = setTimeout(() => {
    console.error(`${NAME}: FAIL ${opt.page}: no result after ${opt.timeoutS + 30} s (browser hung)`);
    process.exit(1);
}, (opt.timeoutS + 30) * 1000);
watchdog.unref();

const userDataDir = mkdtempSync(join(tmpdir(), 'check-page-profile-'));
let context;
try {
    try {
        context = await chromium.launchPersistentContext(userDataDir, {
            executablePath: opt.chromium,
            headless: true,
            args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
            viewport: { width: 1280, height: 900 },
            deviceScaleFactor: 1,
            timeout: opt.timeoutS * 1000,
        });
    } catch (e) {
        rmSync(userDataDir, { recursive: true, force: true });
        die(`cannot start ${opt.chromium}: ${e.message.split('\n')[0]}`);
    }
    context.setDefaultTimeout(opt.timeoutS * 1000);
    // a report is one self-contained file: anything fetched from elsewhere is a problem
    await context.route('**/*', (route) => {
        const url = route.request().url();
        if (/^(file|data|blob|about):/.test(url)) return route.continue();
        problem(`outside request: ${route.request().method()} ${url} (a report must be self-contained)`);
        return route.abort('blockedbyclient');
    });
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m) => {
        if (m.type() === 'error') problem(`console error: ${m.text()}${where(m.location())}`);
        else if (m.type() === 'warning') warnings.push(`console warning: ${m.text()}${where(m.location())}`);
    });
    page.on('pageerror', (e) => problem(`page error (uncaught exception): ${e.name ? e.name + ': ' : ''}${e.message}`));
    page.on('requestfailed', (r) => {
        if (/^(file|data|blob):/.test(r.url())) problem(`failed to load ${r.url()}: ${r.failure()?.errorText ?? '?'}`);
    });
    page.on('crash', () => problem('the page crashed'));

    const url = pathToFileURL(resolve(opt.page)).href;
    const resp = await page.goto(url, { waitUntil: 'load' }).catch((e) => problem(`page did not load: ${e.message.split('\n')[0]}`));
    if (resp !== undefined) {
        // fonts and two frames (layout and paint done), then a moment for late timers to throw
        await page.evaluate(() => document.fonts.ready.then(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))));
        await page.waitForTimeout(opt.settleMs);

        // every top-level inline <svg>: its nearest heading above, its size on screen, and its
        // lines (polyline, path) with a bounding box of positive width and height on screen
        // inside the svg. Axes, ticks and legend swatches are straight horizontal or vertical
        // strokes (a zero side), so they do not count: a plot counts only with a real curve.
        const plots = await page.evaluate(() => {
            const heads = [...document.querySelectorAll('h1,h2,h3,h4,h5,h6')];
            return [...document.querySelectorAll('svg')]
                .filter((s) => !s.parentElement || !s.parentElement.closest('svg'))
                .map((svg) => {
                    let heading = '';
                    for (const h of heads) if (h.compareDocumentPosition(svg) & Node.DOCUMENT_POSITION_FOLLOWING) heading = h.textContent.trim();
                    const r = svg.getBoundingClientRect();
                    let lines = 0, curves = 0, outside = 0;
                    for (const el of svg.querySelectorAll('polyline, path')) {
                        lines++;
                        const b = el.getBBox();
                        if (!(b.width > 0 && b.height > 0)) continue;
                        const c = el.getBoundingClientRect();
                        const inside = c.right > r.left && c.left < r.right && c.bottom > r.top && c.top < r.bottom;
                        if (inside) curves++;
                        else outside++;
                    }
                    // text drawn over text (an axis title over its tick labels): boxes on
                    // screen that overlap by at least 2 px both ways
                    const texts = [...svg.querySelectorAll('text')].map((t) => [t.textContent.trim(), t.getBoundingClientRect()]).filter(([s, b]) => s && b.width > 0);
                    const clashes = [];
                    for (let i = 0; i < texts.length; i++)
                        for (let j = i + 1; j < texts.length; j++) {
                            const [a, b] = [texts[i][1], texts[j][1]];
                            const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
                            const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
                            if (w >= 2 && h >= 2) clashes.push(`"${texts[i][0]}" and "${texts[j][0]}"`);
                        }
                    const cs = getComputedStyle(svg);
                    return { heading, width: r.width, height: r.height, hidden: cs.display === 'none' || cs.visibility !== 'visible', lines, curves, outside, clashes };
                });
        });
        plots.forEach((p, i) => {
            const name = `plot ${i + 1} of ${plots.length} (under "${p.heading || 'no heading'}")`;
            if (p.hidden || !(p.width > 0 && p.height > 0)) problem(`${name}: not shown (${p.hidden ? 'hidden' : `${p.width}×${p.height} px`})`);
            else if (p.curves === 0) problem(`${name}: empty, no line drawn (${p.lines} polyline/path elements, none with width and height > 0 inside the plot${p.outside ? `; ${p.outside} drawn outside it` : ''})`);
            if (p.clashes.length) problem(`${name}: text drawn over text: ${p.clashes[0]}${p.clashes.length > 1 ? ` and ${p.clashes.length - 1} more overlapping pair${p.clashes.length > 2 ? 's' : ''}` : ''}`);
        });
        if (plots.length < opt.minPlots) problem(`${plots.length} plot${plots.length === 1 ? '' : 's'} on the page, expected at least ${opt.minPlots}`);
        opt.plots = plots;

        // the whole page as a picture; never over an existing file unless --force
        try {
            const png = await page.screenshot({ fullPage: true, animations: 'disabled' });
            if (png.length < 100 || png.readUInt32BE(0) !== 0x89504e47) problem(`screenshot: not a PNG (${png.length} bytes)`);
            else {
                writeFileSync(opt.screenshot, png, { flag: opt.force ? 'w' : 'wx' });
                opt.shot = { w: png.readUInt32BE(16), h: png.readUInt32BE(20), bytes: png.length };
            }
        } catch (e) {
            problem(`screenshot: ${e.message.split('\n')[0]}`);
        }
    }
} finally {
    if (context) await context.close().catch(() => {});
    rmSync(userDataDir, { recursive: true, force: true });
}

const secs = ((Date.now() - started) / 1000).toFixed(1);
for (const w of warnings) console.log(`${NAME}: note: ${w}`);
if (problems.length) {
    for (const p of problems) console.log(`${NAME}: FAIL ${p}`);
    const shot = opt.shot ? `; screenshot ${opt.screenshot}` : '';
    console.log(`${NAME}: ${opt.page}: ${problems.length} problem${problems.length === 1 ? '' : 's'}${shot} (${secs} s)`);
    process.exit(1);
}
const n = opt.plots.length;
console.log(`${NAME}: ok ${opt.page}: ${n} plot${n === 1 ? '' : 's'} drawn (at least ${opt.minPlots} required), console errors 0, warnings ${warnings.length}, page errors 0; screenshot ${opt.screenshot} (${opt.shot.w}×${opt.shot.h} px); ${secs} s`);
