// A small Markdown renderer for the chat page. It builds DOM nodes and sets every piece of
// text as textContent, so nothing the model writes is ever parsed as HTML: the output is safe
// by construction (no sanitizer to get wrong). Links are kept only for http(s) and mailto.
"use strict";

const MD = (() => {
  const SAFE_LINK = /^(https?:|mailto:)/i;

  function inline(parent, text) {
    // `code`, **bold**, *italic* / _italic_, [text](url); the rest is plain text
    const pattern = /(`+)([\s\S]*?)\1|\*\*([\s\S]+?)\*\*|(?<![\w*])\*(?!\s)([^*]+?)\*(?!\w)|(?<!\w)_(?!\s)([^_]+?)_(?!\w)|\[([^\]]+)\]\(([^)\s]+)\)/g;
    let last = 0;
    for (const m of text.matchAll(pattern)) {
      if (m.index > last) parent.append(text.slice(last, m.index));
      let node;
      if (m[1]) { node = document.createElement("code"); node.textContent = m[2]; }
      else if (m[3] !== undefined) { node = document.createElement("strong"); inline(node, m[3]); }
      else if (m[4] !== undefined || m[5] !== undefined) { node = document.createElement("em"); inline(node, m[4] ?? m[5]); }
      else if (SAFE_LINK.test(m[7])) {
        node = document.createElement("a");
        node.href = m[7];
        node.rel = "noopener noreferrer nofollow";
        node.target = "_blank";
        node.textContent = m[6];
      } else { node = document.createTextNode(m[0]); }
      parent.append(node);
      last = m.index + m[0].length;
    }
    if (last < text.length) parent.append(text.slice(last));
  }

  function render(text) {
    const root = document.createDocumentFragment();
    const lines = text.replace(/\r\n?/g, "\n").split("\n");
    let i = 0;
    let paragraph = [];
    const flush = () => {
      if (!paragraph.length) return;
      const p = document.createElement("p");
      paragraph.forEach((line, n) => { if (n) p.append(document.createElement("br")); inline(p, line); });
      root.append(p);
      paragraph = [];
    };
    while (i < lines.length) {
      const line = lines[i];
      const fence = line.match(/^\s*(```|~~~)\s*([\w+-]*)\s*$/);
      if (fence) {
        flush();
        const body = [];
        i += 1;
        while (i < lines.length && !lines[i].trim().startsWith(fence[1])) { body.push(lines[i]); i += 1; }
        i += 1;  // the closing fence (or the end of a reply still streaming)
        const pre = document.createElement("pre");
        const code = document.createElement("code");
        if (fence[2]) code.dataset.lang = fence[2];
        code.textContent = body.join("\n");
        pre.append(code);
        root.append(pre);
        continue;
      }
      const heading = line.match(/^(#{1,6})\s+(.*)$/);
      if (heading) {
        flush();
        const h = document.createElement("h" + Math.min(heading[1].length + 2, 6));
        inline(h, heading[2]);
        root.append(h);
        i += 1;
        continue;
      }
      const item = line.match(/^\s*([*+-]|\d+[.)])\s+(.*)$/);
      if (item) {
        flush();
        const ordered = /\d/.test(item[1]);
        const list = document.createElement(ordered ? "ol" : "ul");
        while (i < lines.length) {
          const next = lines[i].match(/^\s*([*+-]|\d+[.)])\s+(.*)$/);
          if (!next || /\d/.test(next[1]) !== ordered) break;
          const li = document.createElement("li");
          inline(li, next[2]);
          list.append(li);
          i += 1;
        }
        root.append(list);
        continue;
      }
      if (/^\s*>\s?/.test(line)) {
        flush();
        const quote = document.createElement("blockquote");
        const body = [];
        while (i < lines.length && /^\s*>\s?/.test(lines[i])) { body.push(lines[i].replace(/^\s*>\s?/, "")); i += 1; }
        quote.append(render(body.join("\n")));
        root.append(quote);
        continue;
      }
      if (!line.trim()) flush(); else paragraph.push(line);
      i += 1;
    }
    flush();
    return root;
  }

  return { render };
})();
