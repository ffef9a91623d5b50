/** Small DOM helpers: typed lookups and element creation. Text always goes in as text, never as HTML. */

type ElementType<T extends HTMLElement> = { new (): T; prototype: T };

/** The element with this id, checked to be of the expected type (a page/script mismatch fails loudly). */
export function byId<T extends HTMLElement>(id: string, type: ElementType<T>): T {
  const element = document.getElementById(id);
  if (!(element instanceof type)) throw new Error(`Console page is missing #${id} (${type.name})`);
  return element;
}

export type Child = Node | string | number | null | undefined | false;
export type Attributes = Record<string, string | number | boolean | null | undefined>;

/**
 * Creates an element. Attributes: `class` sets the class, `true` sets a boolean attribute, `false`,
 * null and undefined leave it out. Children: nodes, or strings added as text.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, ...children);
  return element;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
}

/**
 * An e-mail address that wraps where a reader expects: before each `@` and `.` (a <wbr> there), so a
 * narrow column shows "first.last@example" / ".com", not "example.co" / "m". Within a part longer than
 * the line, the cell's overflow-wrap still breaks it. The text, copied or read aloud, is unchanged.
 */
export function breakableEmail(email: string): DocumentFragment {
  const fragment = document.createDocumentFragment();
  email.split(/(?=[.@])/).forEach((part, index) => {
    if (index > 0) fragment.appendChild(document.createElement('wbr'));
    fragment.appendChild(document.createTextNode(part));
  });
  return fragment;
}

/** A span only screen readers announce (extra context for a short visible label). */
export function hiddenText(text: string): HTMLSpanElement {
  return h('span', { class: 'visually-hidden' }, text);
}

/** The service's timestamps are UTC without an offset, with microseconds: `2026-11-22T10:15:30.123456`. */
export function parseServiceTime(value: string): Date | null {
  const match = /^(\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d)?)(\.\d{1,3})?\d*(Z|[+-]\d\d:\d\d)?$/.exec(value);
  if (!match) return null;
  const date = new Date(`${match[1]}${match[2] ?? ''}${match[3] ?? 'Z'}`);
  return Number.isNaN(date.getTime()) ? null : date;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** `2026-11-22` in the browser's time zone. */
function formatDate(date: Date): string {
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

/** `2026-11-22 10:15` in the browser's time zone. */
export function formatDateTime(date: Date): string {
  return `${formatDate(date)} ${formatTime(date)}`;
}

/** `10:15` in the browser's time zone. */
export function formatTime(date: Date): string {
  return `${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/**
 * A `<time>` element for a service timestamp, with the exact UTC value as its tooltip. The default
 * shows the date and the time in two spans (`.date`, `.clock`), so CSS can stack them.
 */
export function timeElement(value: string, format?: (date: Date) => string): HTMLElement {
  const date = parseServiceTime(value);
  if (!date) return h('span', {}, value);
  const attributes = { datetime: date.toISOString(), title: `${value} UTC` };
  if (format) return h('time', attributes, format(date));
  return h(
    'time',
    attributes,
    h('span', { class: 'date' }, formatDate(date)),
    ' ',
    h('span', { class: 'clock' }, formatTime(date)),
  );
}
