/** The Switchyard mark and name. */
export function Brand({ light }: { light?: boolean }) {
  return (
    <span class={`brand${light ? ' brand-light' : ''}`}>
      <span class="brand-mark">
        <svg viewBox="0 0 32 32" width="28" height="28" aria-hidden="true">
          <rect width="32" height="32" rx="8" fill="currentColor" />
          <path
            d="M8 11h11l-3-3M24 21H13l3 3"
            fill="none"
            stroke="#fff"
            stroke-width="2.6"
            stroke-linecap="round"
            stroke-linejoin="round"
          />
        </svg>
      </span>
      <span class="brand-name">Switchyard</span>
    </span>
  );
}
