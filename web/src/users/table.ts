/**
 * The users table: one column per field of the generated field table, in its order (headers built
 * here, not written in index.html), sortable columns as header buttons with `aria-sort`, and each
 * user's row with its edit, delete and copy-id buttons.
 */
import type { User } from '../api.js';
import { breakableEmail, byId, h, hiddenText, timeElement } from '../dom.js';
import type { ConsoleField } from './fields.js';

/** What a row's buttons and a sort header ask of the panel. */
export interface TableActions {
  sort(field: string): void;
  edit(user: User): void;
  remove(user: User): void;
  copyId(user: User): void;
}

export class UsersTable {
  readonly element = byId('users-table', HTMLTableElement);
  readonly body = byId('users-body', HTMLTableSectionElement);
  readonly #caption = byId('users-caption', HTMLElement);
  readonly #columns = byId('users-columns', HTMLTableRowElement);

  constructor(
    private readonly fields: readonly ConsoleField[],
    private readonly actions: TableActions,
  ) {
    this.#columns.replaceChildren(...fields.map((field) => this.#header(field)), this.#actionsHeader());
  }

  #header(field: ConsoleField): HTMLTableCellElement {
    const attributes = { scope: 'col', 'data-field': field.name, class: field.cell === 'id' ? 'id-col' : null };
    if (!field.sortColumn) return h('th', attributes, field.label);
    const button = h(
      'button',
      { type: 'button', class: 'sort-button' },
      field.label,
      h('span', { class: 'sort-icon', 'aria-hidden': 'true' }),
    );
    button.addEventListener('click', () => this.actions.sort(field.name));
    return h('th', { ...attributes, 'data-sort': field.name }, button);
  }

  #actionsHeader(): HTMLTableCellElement {
    return h('th', { scope: 'col', class: 'actions-col' }, h('span', { class: 'visually-hidden' }, 'Actions'));
  }

  /** The sort in the headers (`aria-sort`) and in the caption. */
  showSort(sort: string, order: 'asc' | 'desc'): void {
    const ordered = order === 'asc' ? 'ascending' : 'descending';
    for (const header of this.#columns.querySelectorAll<HTMLTableCellElement>('th[data-sort]')) {
      if (header.dataset.sort === sort) header.setAttribute('aria-sort', ordered);
      else header.removeAttribute('aria-sort');
    }
    const words = this.fields.find((field) => field.name === sort)?.sortWords ?? sort;
    this.#caption.textContent = `Users, sorted by ${words}, ${ordered}`;
  }

  setBusy(busy: boolean): void {
    this.element.setAttribute('aria-busy', String(busy));
  }

  /** `rows`, `empty`, `stale` (an error over rows still shown), `error`; undefined: none (cleared). */
  setState(state: 'rows' | 'empty' | 'stale' | 'error' | undefined): void {
    if (state === undefined) delete this.element.dataset.state;
    else this.element.dataset.state = state;
  }

  /** The rows; a focused row button (Edit, Delete, copy) keeps the focus when its user is still shown. */
  showUsers(users: readonly User[]): void {
    const focused = document.activeElement;
    const kept =
      focused instanceof HTMLElement && this.body.contains(focused) && focused.dataset.userId !== undefined
        ? `[data-action="${CSS.escape(focused.dataset.action ?? '')}"][data-user-id="${CSS.escape(focused.dataset.userId)}"]`
        : null;
    this.setState(users.length === 0 ? 'empty' : 'rows');
    this.body.replaceChildren(...users.map((user) => this.#row(user)));
    if (kept) this.body.querySelector<HTMLElement>(kept)?.focus();
  }

  /** The row shown when the page has no users: why, and (when filtered) a way out. */
  showEmpty(filtered: boolean, clearFilters: HTMLButtonElement): void {
    this.setState('empty');
    this.body.replaceChildren(
      h(
        'tr',
        { class: 'empty-row' },
        h(
          'td',
          { colspan: this.fields.length + 1 },
          h('p', { class: 'empty-title' }, filtered ? 'No users match' : 'No users yet'),
          h(
            'p',
            { class: 'empty-text' },
            filtered ? 'Try another search or role, or clear the filters.' : 'Add the first one with “Add user”.',
          ),
          filtered ? clearFilters : null,
        ),
      ),
    );
  }

  clear(): void {
    this.body.replaceChildren();
    this.setBusy(false);
    this.setState(undefined);
  }

  #row(user: User): HTMLTableRowElement {
    const button = (action: string, label: string, style: string) =>
      h(
        'button',
        { type: 'button', class: `button small${style}`, 'data-action': action, 'data-user-id': user.id },
        label,
        hiddenText(` ${user.name}`),
      );
    const edit = button('edit', 'Edit', '');
    const remove = button('delete', 'Delete', ' danger-outline');
    edit.addEventListener('click', () => this.actions.edit(user));
    remove.addEventListener('click', () => this.actions.remove(user));
    return h(
      'tr',
      { 'data-id': user.id },
      ...this.fields.map((field) => this.#cell(field, user)),
      h('td', { class: 'cell-actions' }, h('div', { class: 'row-actions' }, edit, remove)),
    );
  }

  #cell(field: ConsoleField, user: User): HTMLTableCellElement {
    const value = (user as Record<string, string | undefined>)[field.name] ?? '';
    const cell = (kind: string, ...content: (Node | string)[]) =>
      h('td', { class: `cell-${kind}`, 'data-field': field.name, 'data-label': field.label }, ...content);
    switch (field.cell) {
      case 'id':
        return cell(
          'id',
          h(
            'span',
            { class: 'id-text', title: value },
            h('span', { 'aria-hidden': 'true' }, `${value.slice(0, 8)}…`),
            hiddenText(value),
          ),
          this.#copyButton(user),
        );
      case 'time':
        return cell('date', timeElement(value));
      case 'role':
        return cell(cssToken(field.name), h('span', { class: `role-badge role-${cssToken(value)}` }, value));
      case 'email':
        // One line; a value longer than its column ends in an ellipsis, whole in the tooltip.
        return cell(cssToken(field.name), h('span', { class: 'clip', title: value }, breakableEmail(value)));
      case 'text':
        return cell(cssToken(field.name), h('span', { class: 'clip', title: value }, value));
    }
  }

  #copyButton(user: User): HTMLButtonElement {
    const copy = h(
      'button',
      {
        type: 'button',
        class: 'icon-button',
        'data-action': 'copy-id',
        'data-user-id': user.id,
        title: 'Copy the id',
        'aria-label': `Copy the id of ${user.name}`,
      },
      h('span', { class: 'copy-icon', 'aria-hidden': 'true' }),
    );
    copy.addEventListener('click', () => this.actions.copyId(user));
    return copy;
  }
}

function cssToken(value: string): string {
  return value.toLowerCase().replace(/[^a-z0-9_-]/g, '-');
}
