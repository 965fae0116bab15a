/// The console's one stylesheet, served by the console itself at `/console.css` (the policy allows
/// `style-src 'self'` and nothing inline). Readable from a 320-pixel phone to a desktop: one
/// column, tables that scroll sideways inside their own box, and a visible focus ring for keyboard use.
enum ConsoleStylesheet {
    static let path = "/console.css"

    static let css = """
        :root { color-scheme: light; --ink: #1d1d1f; --muted: #5b5b60; --line: #d2d2d7; --accent: #0a58ca;
          --danger: #b3261e; --ok: #1e7d32; --paper: #ffffff; --wash: #f5f5f7; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
          color: var(--ink); background: var(--wash); }
        a { color: var(--accent); }
        a:focus-visible, button:focus-visible, input:focus-visible, summary:focus-visible {
          outline: 3px solid var(--accent); outline-offset: 2px; }
        .skip { position: absolute; left: -9999px; top: 0; }
        .skip:focus { left: 8px; top: 8px; background: var(--paper); padding: 8px 12px; z-index: 10; }
        header { background: var(--ink); color: #fff; padding: 12px 16px; display: flex; flex-wrap: wrap;
          align-items: center; gap: 8px 24px; }
        header .brand { font-weight: 700; margin: 0; }
        header nav ul { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: 4px 16px; }
        header nav a { color: #fff; text-decoration: none; padding: 4px 0; border-bottom: 2px solid transparent; }
        header nav a[aria-current="page"] { border-bottom-color: #fff; }
        header form { margin: 0 0 0 auto; }
        header .who { color: #d2d2d7; font-size: 14px; margin: 0; }
        main { max-width: 1100px; margin: 0 auto; padding: 16px; }
        h1 { font-size: 1.6rem; margin: 8px 0 16px; }
        h2 { font-size: 1.2rem; margin: 24px 0 8px; }
        section > h2:first-child, .card > h2:first-child { margin-top: 0; }
        section, .card { background: var(--paper); border: 1px solid var(--line); border-radius: 8px;
          padding: 16px; margin: 0 0 16px; }
        .table-wrap { overflow-x: auto; }
        table { border-collapse: collapse; width: 100%; font-size: 15px; }
        caption { text-align: left; font-weight: 600; padding: 0 0 8px; }
        th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { font-weight: 600; color: var(--muted); }
        td .mono, td time { overflow-wrap: normal; white-space: nowrap; }
        td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
        dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
        dl.facts dt { color: var(--muted); }
        dl.facts dd { margin: 0; overflow-wrap: anywhere; }
        code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 0.9em;
          overflow-wrap: anywhere; }
        form.stack { display: grid; gap: 8px; max-width: 480px; }
        form.inline { display: flex; flex-wrap: wrap; gap: 8px; align-items: end; }
        label { font-weight: 600; display: block; }
        input[type="text"], input[type="password"], input[type="search"], input[type="date"] { font: inherit; padding: 8px 10px;
          border: 1px solid var(--muted); border-radius: 6px; width: 100%; min-width: 0; }
        form.inline .field { flex: 1 1 220px; }
        ul.presets { list-style: none; margin: 0 0 12px; padding: 0; display: flex; flex-wrap: wrap; gap: 8px; }
        ul.presets a { display: inline-block; padding: 6px 12px; border: 1px solid var(--accent); border-radius: 6px;
          text-decoration: none; }
        ul.presets a[aria-current="true"] { background: var(--accent); color: #fff; }
        button { font: inherit; padding: 8px 16px; border-radius: 6px; border: 1px solid var(--accent);
          background: var(--accent); color: #fff; cursor: pointer; }
        button.secondary { background: transparent; color: #fff; border-color: #fff; }
        button.danger { background: var(--danger); border-color: var(--danger); }
        .hint { color: var(--muted); font-size: 14px; margin: 0; }
        .notice { border-left: 4px solid var(--ok); }
        .error { border-left: 4px solid var(--danger); }
        .stats { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 12px; margin: 0 0 16px; }
        .stat { background: var(--paper); border: 1px solid var(--line); border-radius: 8px; padding: 12px; }
        .stat dt { color: var(--muted); font-size: 14px; }
        .stat dd { margin: 0; font-size: 1.6rem; font-weight: 700; font-variant-numeric: tabular-nums; }
        figure.chart-figure { margin: 16px 0; overflow-x: auto; }
        figure.chart-figure figcaption { font-weight: 600; margin: 0 0 4px; }
        svg.chart { width: 100%; height: auto; max-width: 720px; display: block; }
        svg.chart text { font-size: 12px; fill: var(--muted); }
        svg.chart .bar { fill: var(--accent); }
        svg.chart .bar.alt { fill: var(--ok); }
        svg.chart .line { fill: none; stroke: var(--accent); stroke-width: 2; }
        svg.chart .axis { stroke: var(--line); }
        @media (max-width: 600px) {
          body { font-size: 15px; }
          header { padding: 10px 12px; }
          header form { margin: 0; }
          main { padding: 12px 8px; }
          section, .card { padding: 12px; }
          dl.facts { grid-template-columns: 1fr; gap: 0; }
          dl.facts dd { margin-bottom: 6px; }
          th, td { padding: 5px 6px; }
          /* A chart keeps a width its labels can be read at, and scrolls sideways in its figure. */
          svg.chart { min-width: 560px; }
          svg.chart text { font-size: 15px; }
        }
        """
}
