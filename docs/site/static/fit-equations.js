// Display equations keep their lines: MathJax breaks none of them mid-formula (automatic line
// breaks are off in conf.py), and one wider than the text column is scaled down to fit it, to no
// less than MIN of its size (below that, on a narrow screen, it scrolls sideways, as div.math
// lets it). The page says it is done with data-equations-fitted="yes" on <html>.
(function () {
  "use strict";
  var MIN = 0.6;

  function width(math) {
    // MathJax's HTML-CSS output: span.math, which the theme may cap at the column's width, holds
    // the formula's own box.
    var inner = math.firstElementChild;
    return Math.max(math.getBoundingClientRect().width, math.scrollWidth,
                    inner ? inner.getBoundingClientRect().width : 0);
  }

  function fit() {
    var boxes = document.querySelectorAll("div.math");
    for (var i = 0; i < boxes.length; i++) {
      var box = boxes[i];
      var math = box.querySelector(".MathJax span.math") || box.querySelector(".MathJax");
      if (!math) continue;
      box.style.fontSize = "";
      var wide = width(math), room = box.clientWidth;
      if (wide > room) {
        box.style.fontSize = (100 * Math.max(MIN, (room - 2) / wide)).toFixed(1) + "%";
      }
    }
    document.documentElement.setAttribute("data-equations-fitted", "yes");
  }

  function start() {
    if (!(window.MathJax && window.MathJax.Hub && window.MathJax.Hub.Register)) {
      setTimeout(start, 50);
      return;
    }
    window.MathJax.Hub.Register.StartupHook("End", function () { window.MathJax.Hub.Queue(fit); });
  }

  start();
  var timer = null;
  window.addEventListener("resize", function () {
    clearTimeout(timer);
    timer = setTimeout(fit, 150);
  });
})();
